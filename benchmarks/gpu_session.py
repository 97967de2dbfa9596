"""The GPU measurement: one prepared script for the lent accelerator machine (one NVIDIA H100
80 GB or H200, 16 cores, no network, Python 3.12 with PyTorch and JAX for CUDA; no
TensorFlow, Keras, Snakemake or Docker there), run here first on the CPU at tiny sizes.

Subcommands:

* ``wheels --dest .whl`` (here, with network): the packages that machine lacks, as wheels for
  its Python (:data:`CARRIED`: Keras, Snakemake and what they need beyond what is installed
  there; ``--python-version`` 3.12), about 30 MiB; the machine's own packages (NumPy, JAX,
  PyTorch, ...) are used as they are there.
* ``run --out DIR [--wheels .whl] [--parts ...] [--budget S]`` (there): installs the carried
  wheels into a folder of their own (nothing of the machine's is replaced), checks the GPU
  (NVML's identity, and that JAX and PyTorch see it), then runs the parts asked for, in
  order, each only while the budget lasts:

  - ``paper``: the workflow (``snakemake``) on ``config/gpu.yaml``: the paper's data at its
    own size (SYNTHETIC frames, 61,280 images of 64x64), the paper CNN for 20 epochs at batch
    480 on Keras on JAX and on PyTorch, float32 and mixed bfloat16, and with 1 and 8 cores
    feeding the GPU; every run through embryo-bench's own trainer, with its telemetry (NVML:
    utilisation, memory, power, the energy counter) and device record;
  - ``sweep``: ``embryo-bench batch-limit`` of the paper CNN on the GPU (float32 and mixed
    bfloat16 on JAX): throughput against batch size up to the largest batch that fits;
  - ``workloads``: the workflow on ``config/gpu.yaml`` + ``config/gpu-workloads.yaml``: every
    catalog workload at its study's full data size (SYNTHETIC arrays), 2 epochs, on JAX;
  - ``peers``: ``benchmarks/bench_peers.py --device gpu``: the paper CNN through our trainer
    against a plain PyTorch loop and a plain JAX/optax loop, on the same GPU in the same
    command.

  What ran is packed into ``DIR`` (the device tool's ``$OUT``: at most 8 files, 16 MiB each):
  ``records-<parts>.tar.gz`` (each result folder's run records: metrics.json, history.csv,
  telemetry.csv, windows.csv, run.json, settings.json, the tables, figures-spec.json and the
  logs; no models, no data), ``session-<parts>.json`` (the machine, the GPU, versions, each
  part's command, seconds and exit status, what the budget left out) and
  ``log-<parts>.txt``.
* ``unpack RECORDS --into FOLDER`` (here, afterwards): the records and the session file
  unpacked where they are committed (``benchmarks/gpu_measurements/<date>-<gpu>/``), so that
  ``merge:`` reads the paper's runs (config/gpu-here.yaml) and
  ``benchmarks/bench_gpu_records.py`` prints the figures.

``--tiny`` runs everything at sizes a 2-core CPU finishes in a minute or two, and ``--cpu``
turns every GPU target into a CPU one (``gpus: 0``, named ``cpu-*``): the dress rehearsal
here (tests/test_gpu_session.py), so that the machine's minutes go to measuring.

Errors: a part that fails is recorded with its exit status and the end of its output, and the
next part still runs; ``run`` exits 1 when any part failed, 0 otherwise. No GPU where one is
asked for (without ``--cpu``) stops before any part, exit 2, saying what NVML and each
framework see.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tarfile
import time
import zlib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

#: The packages the lent machine lacks (its own list: /work/.library/device/KINDS.md, "Python
#: packages already there"), at the versions this checkout's environment was tested with:
#: Keras and Snakemake, and what they and embryo-bench need beyond the machine's packages.
#: ``connection-pool`` (Snakemake's) is published as a source archive only: built here into a
#: pure-Python wheel.
CARRIED = (
    "annotated-types==0.8.0",
    "argparse-dataclass==2.0.0",
    "conda-inject==1.3.2",
    "configargparse==1.9.0",
    "connection-pool==0.0.3",
    "docker==7.2.0",
    "docutils==0.22.4",
    "dpath==2.2.0",
    "fastjsonschema==2.22.3",
    "gitdb==4.0.12",
    "gitpython==3.2.1",
    "greenlet==3.5.6",
    "humanfriendly==10.0",
    "immutables==0.21",
    "jsonschema==4.26.0",
    "jsonschema-specifications==2025.9.1",
    "jupyter-core==5.9.1",
    "keras==3.15.1",
    "namex==0.1.0",
    "nbformat==5.11.1",
    "optree==0.20.0",
    "platformdirs==4.14.8",
    "pulp==3.3.2",
    "pydantic==2.14.4",
    "pydantic-core==2.50.5",
    "referencing==0.37.0",
    "rpds-py==2026.9.1",
    "smart-open==7.7.1",
    "smmap==5.0.3",
    "snakemake==9.27.1",
    "snakemake-interface-common==1.23.0",
    "snakemake-interface-executor-plugins==9.4.0",
    "snakemake-interface-logger-plugins==2.1.0",
    "snakemake-interface-report-plugins==1.3.0",
    "snakemake-interface-scheduler-plugins==2.0.2",
    "snakemake-interface-storage-plugins==4.4.1",
    "sqlalchemy==2.0.58",
    "sqlmodel==0.0.37",
    "tenacity==9.2.1",
    "throttler==1.2.3",
    "traitlets==5.16.1",
    "typing-inspection==0.4.5",
    "yte==1.9.4",
)
#: pip's platform tags of the lent machine (x86-64 Linux, glibc 2.28 or newer).
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")  # fmt: skip
PARTS = ("paper", "sweep", "workloads", "peers")
#: What a records archive keeps of a result folder: the run records and tables, not the data
#: (shards, arrays, image files) nor the models.
KEPT_SUFFIXES = (".json", ".csv", ".md", ".yaml", ".log", ".txt", ".png")
KEPT_FOLDERS = (
    "train",
    "workloads",
    "figures",
    "study",
    "logs",
    "manifest",
    "select",
    "batch-limit",
    "peers",
)
#: The most a file may weigh to come back from the machine (the device tool's limit).
MOST_BYTES = 16 * 2**20
#: Seconds each batch-size sweep may take on the GPU (its search stops there and says so).
SWEEP_SECONDS = 150
#: Where the carried wheels are installed on the machine.
SITE = Path("/tmp/embryo-bench-site")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- wheels (here) ---------------------------------------------------------------------------


def cmd_wheels(args) -> int:
    """Download :data:`CARRIED` for the machine's Python into ``args.dest`` (binary wheels
    for its platform; a package published only as source built here into a wheel)."""
    dest = Path(args.dest)
    dest.mkdir(parents=True, exist_ok=True)
    platforms = [f"--platform={p}" for p in PLATFORMS]
    for requirement in CARRIED:
        name = requirement.split("==")[0]
        if any(_wheel_name(w) == _normal(name) for w in dest.glob("*.whl")):
            continue
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
               f"--python-version={args.python_version}", "--implementation=cp", *platforms,
               "-d", str(dest), requirement]  # fmt: skip
        if subprocess.run(cmd, capture_output=True, text=True).returncode:
            build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest),
                     requirement]  # fmt: skip
            proc = subprocess.run(build, capture_output=True, text=True)
            if proc.returncode:
                print(f"{requirement}: no wheel for Python {args.python_version}: "
                      f"{proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)  # fmt: skip
                return 1
    size = sum(w.stat().st_size for w in dest.glob("*.whl")) / 2**20
    print(f"{len(list(dest.glob('*.whl')))} wheels in {dest}, {size:.1f} MiB")
    return 0


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _wheel_name(path: Path) -> str:
    return _normal(path.name.split("-")[0])


# --- run (there) -----------------------------------------------------------------------------


def install_wheels(wheels: Path) -> None:
    """Install the carried wheels into :data:`SITE` (``pip --target``: the machine's own
    packages stay as they are) and put it and this checkout's ``src`` first on
    ``PYTHONPATH``, for this process's children and, by re-running itself, for this one."""
    found = sorted(str(w) for w in wheels.glob("*.whl"))
    if not found:
        raise SystemExit(f"--wheels {wheels}: no .whl files (make them here: wheels --dest)")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
         "--no-cache-dir", "--upgrade", "--target", str(SITE), *found],
        check=True,
    )  # fmt: skip


def child_env(extra: dict | None = None) -> dict:
    """The environment of every command this script starts: this checkout's ``src`` (and
    the carried wheels' folder, when installed) first on ``PYTHONPATH``, output unbuffered."""
    paths = [str(REPO / "src")] + ([str(SITE)] if SITE.is_dir() else [])
    old = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": ":".join([*paths, *([old] if old else [])]),
            "PYTHONUNBUFFERED": "1", **(extra or {})}  # fmt: skip


def gpu_check() -> dict:
    """What this machine has: NVML's identity of every GPU
    (:func:`embryo_bench.recording.hardware.gpu_identity`), and whether JAX and PyTorch see a
    GPU (asked in a subprocess each, so this process loads neither), with their versions."""
    probes = {
        "jax": "import jax; d = jax.devices(); print(jax.__version__, d[0].platform, "
        "getattr(d[0], 'device_kind', ''))",
        "torch": "import torch; print(torch.__version__, 'gpu' if torch.cuda.is_available() "
        "else 'cpu', torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')",
    }
    out = {}
    for name, code in probes.items():
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=child_env(), timeout=300)  # fmt: skip
        words = proc.stdout.split(maxsplit=2) if proc.returncode == 0 else []
        out[name] = (
            {"version": words[0], "platform": words[1], "device": (words[2:] or [""])[0].strip()}
            if len(words) >= 2
            else {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
        )
    from embryo_bench.recording.hardware import gpu_identity, gpu_names

    return {"nvml": gpu_identity(list(range(len(gpu_names())))), **out}


def tiny_overlay(config: dict, cpu: bool, tiny: bool, outdir: Path, workloads: bool) -> dict:
    """The settings ``--tiny`` and ``--cpu`` lay over ``config`` (a configuration's own
    settings, as read): ``outdir`` where the results go; tiny data and runs (``tiny``: 120
    frames of 48 px, 4 rotations, 16 px images, 2 epochs, a few workloads of 64 samples); every
    GPU target as a CPU one named ``cpu-*`` on one core (``cpu``)."""
    out: dict = {"outdir": str(outdir)}
    if cpu:
        targets = []
        for t in config["targets"]:
            t = {**t, "name": t["name"].replace("gpu-", "cpu-", 1), "gpus": 0, "cpus": 1,
                 "memory": "8g"}  # fmt: skip
            t.pop("paper_system", None)
            t["description"] = f"CPU stand-in of a GPU target: {t['description']}"
            targets.append(t)
        out["targets"] = targets
        out["compare"] = {"base": config["compare"]["base"].replace("gpu-", "cpu-", 1)}
    if tiny:
        out["dataset"] = {"frame_size": 48, "synthetic": {"embryos": 10, "frames_per_embryo": 12,
                          "total_frames": 120, "three_cell_frames": 8}}  # fmt: skip
        out["select"] = {"shards": 1}
        out["preprocess"] = {"rotation_step": 90, "image_size": 16}
        out["train"] = {"epochs": 2, "probe_seconds": 0.25, "batch_size": 16, "repeats": 1}
        if workloads:
            out["workloads"] = [
                {k: v for k, v in w.items() if k not in ("train_samples", "test_samples")}
                | {"train_samples": 64, "test_samples": 32, "epochs": 2, "batch_size": 16}
                for w in config["workloads"]
                if w["name"] in TINY_WORKLOADS
            ]
    return out


#: The workloads the tiny rehearsal keeps: one of each kind of model and input (an MLP, a
#: CNN from memory and from files, an LSTM); the others take the same path.
TINY_WORKLOADS = ("mnist-mlp", "cifar10-cnn", "imdb-bilstm", "catsdogs-cnn-files")


def configs(part: str, args, work: Path) -> list[str]:
    """The configuration files of a workflow part, with the ``--tiny``/``--cpu`` overlay
    written into ``work`` where asked."""
    files = ["config/gpu.yaml"] + (["config/gpu-workloads.yaml"] if part == "workloads" else [])
    if not (args.tiny or args.cpu):
        return files
    from embryo_bench.vocabulary.config import read_config_files

    merged, _ = read_config_files([str(REPO / f) for f in files])
    outdir = Path(args.results) / ("gpu" if part == "paper" else "gpu-workloads")
    overlay = work / f"overlay-{part}.yaml"
    overlay.write_text(
        yaml.safe_dump(tiny_overlay(merged, args.cpu, args.tiny, outdir, part == "workloads"))
    )
    return [*files, str(overlay)]


def outdir_of(config_files: list[str]) -> Path:
    """The outdir the last of ``config_files`` that sets one gives (relative: to the
    checkout)."""
    from embryo_bench.vocabulary.config import read_config_files

    outdir = Path(read_config_files([str(REPO / f) for f in config_files])[0]["outdir"])
    return outdir if outdir.is_absolute() else REPO / outdir


def run_part(name: str, cmd: list[str], budget_left: float, logfile) -> dict:
    """Run one part's command in its own process group, its output into ``logfile``, killed
    (the whole group) when ``budget_left`` seconds run out. Returns what ran: command,
    seconds, exit status ("stopped at the budget" where killed) and the output's last lines."""
    log(f"{name}: {' '.join(cmd)}")
    logfile.write(f"\n===== {name}: {' '.join(cmd)}\n")
    logfile.flush()
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip
    tail: list[str] = []
    deadline = start + budget_left
    stopped = False
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    while True:
        line = proc.stdout.readline()
        if line:
            logfile.write(line)
            tail = (tail + [line.rstrip()])[-30:]
            continue
        if proc.poll() is not None:
            rest = proc.stdout.read() or ""
            logfile.write(rest)
            tail = (tail + rest.splitlines())[-30:]
            break
        if time.monotonic() > deadline and not stopped:
            os.killpg(proc.pid, signal.SIGTERM)
            stopped = True
            deadline += 30  # then SIGKILL if it does not stop
        elif stopped and time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.2)
    seconds = time.monotonic() - start
    status = "stopped at the budget" if stopped else proc.returncode
    log(f"{name}: {status} after {seconds:.0f} s")
    logfile.flush()
    return {"command": cmd, "seconds": seconds, "status": status, "tail": tail}


def snakemake_cmd(files: list[str], cores: int) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--cores", str(cores), "--configfile", *files,
            "--keep-going", "--rerun-triggers", "mtime", "params", "input", "code"]  # fmt: skip


def batch_limit_cmds(args, work: Path) -> list[tuple[str, list[str]]]:
    """``embryo-bench batch-limit`` of the paper CNN on the first GPU target of
    ``config/gpu.yaml`` (JAX), float32 and mixed bfloat16: one command each, with the run
    spec the plan makes (written into ``work``), :data:`SWEEP_SECONDS` each on the GPU."""
    from embryo_bench.planning.plan import Plan
    from embryo_bench.vocabulary.config import read_config_files

    files = configs("paper", args, work)
    config, _ = read_config_files([str(REPO / f) for f in files])
    plan = Plan.from_config(config, probe=lambda target: None)
    target = next(iter(plan.targets))
    out = []
    for precision in ("float32", "mixed_bfloat16"):
        spec = plan.spec(target, 1).replace(precision=precision)
        path = work / f"batch-limit-{precision}.json"
        spec.write(path)
        dest = Path(args.results) / "batch-limit" / f"{target}-{precision}"
        cmd = [sys.executable, "-m", "embryo_bench.cli", "batch-limit", "--spec", str(path),
               "--out", str(dest)]  # fmt: skip
        if args.tiny:
            cmd += ["--most", "256", "--steps", "2", "--epochs", "2"]
        else:  # doubling from 480 reaches 61,440 in 8 trials; the budget bounds the bisection
            cmd += ["--steps", "5", "--budget", str(SWEEP_SECONDS)]
        out.append((f"sweep {precision}", cmd))
    return out


def peers_cmd(args) -> list[str]:
    """``benchmarks/bench_peers.py`` on the GPU (``--cpu``: on the CPU): our trainer on Keras
    on JAX and on PyTorch against a plain JAX/optax loop and a plain PyTorch loop of the same
    paper CNN, float32, interleaved repeats; its JSON is rewritten after every run, so a part
    stopped at the budget keeps the runs so far."""
    dest = Path(args.results) / "peers"
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(REPO / "benchmarks" / "bench_peers.py"),
           "--device", "cpu" if args.cpu else "gpu",
           "--entries", "keras-jax,jax,torch,keras-torch",
           "--json", str(dest / "peers.json")]  # fmt: skip
    if args.tiny:
        cmd += ["--steps", "2", "--epochs", "1", "--repeats", "1", "--batch", "32",
                "--threads", "1", "--sgemm-seconds", "0.5"]  # fmt: skip
    else:
        cmd += ["--steps", "50", "--epochs", "3", "--repeats", "2", "--batch", "480",
                "--threads", "4", "--sgemm-seconds", "3", "--timeout", "150"]  # fmt: skip
    return cmd


def pack(results: Path, dest: Path) -> list[str]:
    """The run records under ``results`` (:data:`KEPT_FOLDERS`, :data:`KEPT_SUFFIXES`) into the
    gzipped tar ``dest``; returns the members. Raises SystemExit where it would be larger
    than the machine lets come back (:data:`MOST_BYTES`)."""
    members = []
    with tarfile.open(dest, "w:gz") as tar:
        for path in sorted(results.rglob("*")):
            rel = path.relative_to(results)
            # the figures job's copy of the figures before it (hard links to the same files)
            if any(part.endswith(".previous") for part in rel.parts):
                continue
            if not path.is_file() or path.suffix not in KEPT_SUFFIXES:
                continue
            if not any(part in KEPT_FOLDERS for part in rel.parts[:-1]) and rel.parts[0] not in (
                "figures-spec.json",
            ):
                continue
            tar.add(path, arcname=str(rel))
            members.append(str(rel))
    if dest.stat().st_size > MOST_BYTES:
        raise SystemExit(f"{dest}: {dest.stat().st_size / 2**20:.1f} MiB, over the 16 MiB that "
                         "come back from the machine")  # fmt: skip
    return members


def cmd_run(args) -> int:
    if args.wheels and os.environ.get("EMBRYO_BENCH_SESSION_SITE") != str(SITE):
        install_wheels(Path(args.wheels))
        env = child_env({"EMBRYO_BENCH_SESSION_SITE": str(SITE)})
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    started = time.time()
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        print(f"--parts {args.parts}: unknown {unknown}; expected some of {PARTS}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    work = results / "session-work"
    work.mkdir(exist_ok=True)
    tag = "-".join(parts) or "pack"
    session = {
        "label": args.label,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "parts": parts,
        "budget_s": args.budget,
        "tiny": args.tiny,
        "cpu": args.cpu,
    }
    check = gpu_check()
    session["devices"] = check
    log(f"devices: {json.dumps(check)}")
    sees = [n for n in ("jax", "torch") if check.get(n, {}).get("platform") in ("gpu", "cuda")]
    if not args.cpu and not (check["nvml"] and sees):
        print(
            f"no GPU to measure: NVML {check['nvml']}, jax {check.get('jax')}, torch "
            f"{check.get('torch')}; run with --cpu for the rehearsal",
            file=sys.stderr,
        )
        return 2
    cores = os.cpu_count() or 1
    commands: list[tuple[str, list[str]]] = []
    for part in parts:
        if part in ("paper", "workloads"):
            commands.append((part, snakemake_cmd(configs(part, args, work), cores)))
        elif part == "sweep":
            commands += batch_limit_cmds(args, work)
        elif part == "peers":
            commands.append(("peers", peers_cmd(args)))
    session["ran"] = []
    session["left_out"] = []
    failed = False
    with open(out / f"log-{tag}.txt", "w") as logfile:
        for name, cmd in commands:
            left = args.budget - (time.time() - started)
            if left < 20:
                session["left_out"].append({"part": name, "why": f"{left:.0f} s of budget left"})
                log(f"{name}: left out, {left:.0f} s of budget left")
                continue
            ran = run_part(name, cmd, left, logfile)
            failed |= ran["status"] != 0
            session["ran"].append({"part": name, **ran})
    folders = {
        "gpu": configs("paper", args, work),
        "gpu-workloads": configs("workloads", args, work),
    }
    members = []
    bundle = out / f"records-{tag}.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        for name, files in folders.items():
            folder = outdir_of(files)
            if not folder.is_dir():
                continue
            inner = work / f"{name}.tar.gz"
            for m in pack(folder, inner):
                members.append(f"{name}/{m}")
            tar.add(inner, arcname=f"{name}.tar.gz")
        for extra in ("batch-limit", "peers"):
            if (results / extra).is_dir():
                for path in sorted((results / extra).rglob("*")):
                    if path.is_file() and path.suffix in KEPT_SUFFIXES:
                        arc = f"{extra}/{path.relative_to(results / extra)}"
                        tar.add(path, arcname=arc)
                        members.append(arc)
    session["records"] = members
    session["ended"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    session["seconds"] = time.time() - started
    (out / f"session-{tag}.json").write_text(json.dumps(session, indent=1, default=str))
    size = bundle.stat().st_size / 2**20
    verdict = "a part failed" if failed else "ok"
    log(f"{bundle.name}: {len(members)} files, {size:.2f} MiB; {verdict}")
    return 1 if failed else 0


# --- unpack (here) ---------------------------------------------------------------------------


class Refused(Exception):
    """An archive, or an option, ``unpack`` does not take: one line, exit status 2."""


def safe_members(tar: tarfile.TarFile, where: str = "") -> list[tarfile.TarInfo]:
    """Regular files and folders with relative paths inside the archive only (the records
    come from another machine: no links, devices or paths that climb out).

    Raises:
        Refused: naming the archive (``where``, default its file) and the member.
    """
    members = []
    for m in tar.getmembers():
        parts = Path(m.name).parts
        if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
            raise Refused(
                f"{where or tar.name}: refusing member {m.name!r} (outside the folder or not a "
                "file)"
            )
        members.append(m)
    return members


def _unpack(records: str, into: Path) -> None:
    """Unpack one records archive into ``into``, each inner ``.tar.gz`` into a folder of its
    name, and copy its session file beside them.

    Raises:
        Refused: a member refused (:func:`safe_members`), an inner ``.tar.gz`` that is not a
            file; tarfile.TarError, EOFError, zlib.error: a damaged archive (the caller names
            it).
    """
    with tarfile.open(records) as tar:
        for m in safe_members(tar):
            if m.name.endswith(".tar.gz"):
                if not m.isfile():  # extractfile gave None: an AssertionError
                    raise Refused(
                        f"{records}: member {m.name} is not a file; expected a .tar.gz of records"
                    )
                folder, where = into / m.name[: -len(".tar.gz")], f"{records}: member {m.name}"
                try:
                    with tarfile.open(fileobj=tar.extractfile(m), mode="r:gz") as sub:
                        sub.extractall(folder, members=safe_members(sub, where), filter="data")
                except (tarfile.TarError, EOFError, zlib.error) as exc:
                    raise Refused(
                        f"{where}: not a readable .tar.gz archive ({_one_line(exc)})"
                    ) from None
            else:
                tar.extract(m, into, filter="data")
    session = Path(records).with_name(Path(records).name.replace("records-", "session-")
                                      .replace(".tar.gz", ".json"))  # fmt: skip
    if session.is_file():
        (into / session.name).write_bytes(session.read_bytes())


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line (tarfile's lists each method it tried)."""
    return "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())


def cmd_unpack(args) -> int:
    """Unpack each records archive into ``--into``: exit status 0, or 2 with one line
    ``gpu_session: error: <what>`` for an archive or option it does not take (a refused
    member, a damaged archive, a missing file, ``--into`` a file), as embryo-bench's
    commands refuse bad input."""
    into = Path(args.into)
    try:
        if into.exists() and not into.is_dir():
            raise Refused(f"--into {into}: a file; expected a folder")
        into.mkdir(parents=True, exist_ok=True)
        for records in args.records:
            if not Path(records).is_file():
                raise Refused(f"{records}: not found; expected a records-<parts>.tar.gz")
            try:
                _unpack(records, into)
            except tarfile.FilterError as exc:  # e.g. through a link already in --into
                raise Refused(
                    f"{records}: refusing member {exc.tarinfo.name!r} ({_one_line(exc)})"
                ) from None
            except (tarfile.TarError, EOFError, zlib.error) as exc:
                raise Refused(f"{records}: not a readable tar archive ({_one_line(exc)})") from None
    except Refused as exc:
        print(f"gpu_session: error: {exc}", file=sys.stderr)
        return 2
    print(f"unpacked into {into}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("wheels", help="download the carried wheels (here)")
    w.add_argument("--dest", default=".whl")
    w.add_argument("--python-version", default="3.12")
    r = sub.add_parser("run", help="the measurement (on the GPU machine)")
    r.add_argument("--out", required=True, help="where the records come back from ($OUT)")
    r.add_argument("--wheels", default="", help="the carried wheels' folder (.whl)")
    r.add_argument("--parts", default="paper,sweep", help=f"some of {','.join(PARTS)}")
    r.add_argument(
        "--budget", type=float, default=450.0,
        help="seconds for all parts: one not started by then is left out, one running stopped",
    )  # fmt: skip
    r.add_argument("--results", default=str(REPO / "results" / "gpu-session"),
                   help="where the batch-limit and peers results are written")  # fmt: skip
    r.add_argument("--label", default="", help="what to call this session (e.g. the commit)")
    r.add_argument("--tiny", action="store_true", help="tiny sizes (the rehearsal)")
    r.add_argument("--cpu", action="store_true", help="CPU targets for the GPU ones (rehearsal)")
    u = sub.add_parser("unpack", help="unpack records where they are committed (here)")
    u.add_argument("records", nargs="+")
    u.add_argument("--into", required=True)
    args = p.parse_args(argv)
    return {"wheels": cmd_wheels, "run": cmd_run, "unpack": cmd_unpack}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
