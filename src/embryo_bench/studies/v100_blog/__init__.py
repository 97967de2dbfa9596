"""One study's folder: see its README.md and study.yaml."""
