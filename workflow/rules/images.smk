# Container images of the docker targets, built through the Docker SDK. Each rule writes a
# small JSON record; it reruns only when what the image is built from changes.
from embryo_bench.runners.containers import (
    image_content_hash,
    requirements_file,
    wheelhouse_dir,
)

# Daemons of targets on other machines (docker_host), by file key: how each is reached
# (address, TLS file paths). Read when the Snakefile is parsed, so two addresses with one key
# fail before any job.
REMOTE_DAEMONS = PLAN.remote_daemons


rule base_image:
    output:
        f"{OUT}/{layout.BASE_IMAGE_RECORD}",
    log:
        f"{LOGS}/images/base.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        tag=CONTAINERS["base_image"],
        suite=CONTAINERS["debian_suite"],
        # build_base auto: pulled where a registry answers, else built here.
        pull_first="yes" if CONTAINERS["build_base"] == "auto" else "no",
        code=code("base-image"),
    shell:
        "python3 -m embryo_bench.cli base-image --tag {params.tag:q} --suite {params.suite:q} "
        "--record {output:q} --reuse --pull-first {params.pull_first:q} > {log:q} 2>&1"


rule wheelhouse:
    output:
        f"{OUT}/{layout.wheelhouse_record('{image}')}",
    log:
        f"{LOGS}/images/wheelhouse-{{image}}.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        requirements=lambda wc: requirements_file(wc.image),
        # One folder per image: a cpu build never sends the gpu wheels (3.2 GiB).
        wheels=lambda wc: wheelhouse_dir(wc.image),
        code=code("wheelhouse"),
    shell:
        "python3 -m embryo_bench.cli wheelhouse --image {wildcards.image:q} "
        '--requirements "$EMBRYO_BENCH_REPO"/{params.requirements:q} '
        '--out "$EMBRYO_BENCH_REPO"/{params.wheels:q} --record {output:q} > {log:q} 2>&1'


rule image:
    input:
        unpack(lambda wc: PLAN.image_inputs(wc.image)),
    output:
        f"{OUT}/{layout.image_record('{image}')}",
    log:
        f"{LOGS}/images/{{image}}.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        tag=lambda wc: PLAN.image_tag(wc.image),
        base=CONTAINERS["base_image"],
        pip_source=CONTAINERS["pip_source"],
        # Dockerfile, requirements (by content) and the code the container runs (as code).
        content=lambda wc: image_content_hash(workflow.basedir, wc.image)[:16],
        code=code("build-image"),
    shell:
        "python3 -m embryo_bench.cli build-image --image {wildcards.image:q} "
        "--tag {params.tag:q} --base-image {params.base:q} --pip-source {params.pip_source:q} "
        '--context "$EMBRYO_BENCH_REPO" --record {output:q} > {log:q} 2>&1'


rule daemon:
    output:
        f"{OUT}/{layout.daemon_record('{daemon}')}",
    log:
        f"{LOGS}/images/daemon@{{daemon}}.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        # Address and TLS file paths (never a key's contents). The jobs that use it take it
        # ancient(): a moved certificate reruns this job only, not the image sent or the runs.
        daemon=lambda wc: REMOTE_DAEMONS[wc.daemon].to_json(),
        code=code("daemon"),
    shell:
        "python3 -m embryo_bench.cli daemon --json {params.daemon:q} --out {output:q} "
        "> {log:q} 2>&1"


rule ship_image:
    input:
        record=f"{OUT}/{layout.image_record('{image}')}",
        daemon=ancient(rules.daemon.output[0]),
    output:
        f"{OUT}/{layout.image_record('{image}', '{daemon}')}",
    log:
        f"{LOGS}/images/{{image}}@{{daemon}}.log",
    conda:
        "../../envs/embryo-bench.yaml"
    resources:
        bench_slot=OTHER_JOB_SLOTS,
    params:
        code=code("ship-image"),
    shell:
        # The daemon a docker_host names: docker save here, docker load there.
        "python3 -m embryo_bench.cli ship-image --record {input.record:q} "
        "--daemon {input.daemon:q} --out {output:q} > {log:q} 2>&1"
