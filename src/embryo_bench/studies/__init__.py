"""The paper and the studies around it, one folder each (``studies/<study>/``): its
registry entry, published numbers, workloads, models, claims, configurations and document
(docs/studies/README.md, "Adding a study"); :mod:`.registry` finds them."""
