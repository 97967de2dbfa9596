# Container images of the docker targets, built through the Docker SDK. Each rule writes a
# small JSON record; it reruns only when what the image is built from changes.


rule base_image:
    output:
        f"{OUT}/images/base.json",
    log:
        f"{LOGS}/images/base.log",
    conda:
        "../../envs/embryo-bench.yaml"
    params:
        tag=CONTAINERS.get("base_image", ""),
        suite=CONTAINERS.get("debian_suite", "bookworm"),
        code=code_hash("containers"),
    shell:
        "python3 -m embryo_bench.cli base-image --tag {params.tag:q} --suite {params.suite} "
        "--record {output:q} --reuse > {log:q} 2>&1"


rule wheelhouse:
    output:
        f"{OUT}/images/wheelhouse-{{image}}.json",
    log:
        f"{LOGS}/images/wheelhouse-{{image}}.log",
    conda:
        "../../envs/embryo-bench.yaml"
    params:
        requirements=lambda wc: os.path.join(
            workflow.basedir, f"containers/requirements-{wc.image}.txt"
        ),
        requirements_hash=lambda wc: content_hash(
            [f"containers/requirements-{wc.image}.txt"], workflow.basedir
        )[:16],
        out=os.path.join(workflow.basedir, "containers/wheelhouse"),
        code=code_hash("containers"),
    shell:
        "python3 -m embryo_bench.cli wheelhouse --requirements {params.requirements:q} "
        "--out {params.out:q} --record {output:q} > {log:q} 2>&1"


rule image:
    input:
        unpack(image_inputs),
    output:
        f"{OUT}/images/{{image}}.json",
    log:
        f"{LOGS}/images/{{image}}.log",
    wildcard_constraints:
        image="cpu|gpu",
    conda:
        "../../envs/embryo-bench.yaml"
    params:
        tag=lambda wc: image_tag(wc.image),
        base=CONTAINERS.get("base_image", "python:3.11-slim-bookworm"),
        pip_source=CONTAINERS.get("pip_source", "pypi"),
        content=lambda wc: image_content_hash(wc.image),
        context=workflow.basedir,
    shell:
        "python3 -m embryo_bench.cli build-image --image {wildcards.image} "
        "--tag {params.tag:q} --base-image {params.base:q} --pip-source {params.pip_source} "
        "--context {params.context:q} --record {output:q} > {log:q} 2>&1"
