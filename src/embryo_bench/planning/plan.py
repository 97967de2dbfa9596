"""Everything decided about a configuration before any job runs.

:meth:`Plan.from_config` validates the configuration against ``config/schema.yaml`` and fills
in the schema's defaults (once, here), resolves the hardware targets and keeps those that can
run where the jobs run (:mod:`.targets`), expands ``sweeps:``, picks the cost and comparison
bases (:mod:`.bases`), orders the runs into rounds (:mod:`.schedule`), resolves the workloads
(:mod:`.workloads`), then makes every check a later job would, in one place and one order
(:meth:`Plan.from_config` says which). The Snakemake workflow is a thin adapter over a
:class:`Plan`; tests use it without Snakemake. The plan gives each run (target x repeat of a
workload) its :class:`embryo_bench.vocabulary.spec.RunSpec` (:meth:`Plan.spec`) and each
workload's figures job its spec (:meth:`Plan.figures_spec`); what the data and image rules
are given is :mod:`.paths`', handed on by the plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..data import registry
from ..reporting.merge import check_folders
from ..runners import docker_api
from ..vocabulary.config import Source, load_config, load_schema
from ..vocabulary.figspec import FiguresSpec
from ..vocabulary.layout import PAPER_WORKLOAD
from ..vocabulary.spec import Preprocessing, RunSpec
from . import bounds, daemons, figures, machine_baseline, paths
from .bases import check_base_repeats, compare_base, cost_base
from .rounds import Decision
from .schedule import Schedule, check_round_checks, check_rounds
from .study import check_study, study_workloads
from .targets import (
    Probe,
    Target,
    default_probe,
    expand_sweeps,
    resolve_targets,
    variant_settings,
)
from .workloads import Workload, check_offline_copy, resolve_workloads


@dataclass
class Plan:
    """What a configuration asks for, resolved (made by :meth:`from_config`).

    Attributes:
        config: the validated configuration with every default.
        targets: every target that runs, main targets (config order) then sweep points.
        skipped: target name -> why it cannot run here (``on_missing_hardware: skip``).
        cost_base, cost_note: as :func:`embryo_bench.planning.bases.cost_base`.
        compare_base, compare_note: as :func:`embryo_bench.planning.bases.compare_base`.
        on_this_machine: as :meth:`from_config`'s.
        workloads: every workload, by name, in the configuration's order (:mod:`.workloads`).
        merged_run_dirs: the finished runs of the result folders under ``merge:`` (their run
            folders), checked (:func:`embryo_bench.reporting.merge.check_folders`).
        remote_daemons: how the daemon of every ``docker_host`` a running target names is
            reached, by its file key (:func:`embryo_bench.planning.daemons.check_daemons`).
        baseline: the machine baseline ``stability.baseline`` names, checked; None when the
            setting is empty (:func:`embryo_bench.planning.machine_baseline.check_baseline`).
        schedule: the runs and their rounds (:class:`embryo_bench.planning.schedule.Schedule`).
    """

    config: dict
    targets: dict[str, Target]
    skipped: dict[str, str]
    cost_base: str
    cost_note: str
    compare_base: str = ""
    compare_note: str = ""
    on_this_machine: bool = True
    workloads: dict[str, Workload] = field(default_factory=dict)
    merged_run_dirs: list[str] = field(default_factory=list)
    remote_daemons: dict[str, docker_api.Daemon] = field(default_factory=dict)
    baseline: dict | None = None
    schedule: Schedule = field(init=False)

    def __post_init__(self):
        self.schedule = Schedule(
            targets=self.targets,
            workloads=self.workloads,
            compare=self.config["compare"],
            compare_base=self.compare_base,
            outdir=self.config["outdir"],
            own_repeats=frozenset(e["name"] for e in self.config["targets"] if "repeats" in e),
        )

    @classmethod
    def from_config(
        cls,
        config: dict,
        *,
        probe: Probe | None = None,
        hardware_check: str | None = None,
        schema: dict | None = None,
        on_this_machine: bool = True,
        sources: list[Source] = (),
    ) -> Plan:
        """Resolve a configuration, and check it as every later job would.

        Args:
            config: as loaded from YAML (defaults are filled in here).
            probe: the hardware check to use (tests); default: the one ``hardware_check``
                (argument, else the config's) names,
                :func:`embryo_bench.planning.targets.default_probe`.
            hardware_check: "local", "slurm" or "none"; overrides the config's (a job that
                a cluster runs on a node passes "none": its allocation holds what it asked
                for).
            schema: the schema (default: :func:`load_schema`).
            on_this_machine: this process runs where Snakemake plans the jobs (False in a
                job a cluster runs on a node: the plan was checked where Snakemake started,
                this node is not the machine a ``stability.baseline`` is compared with, and
                it need not hold a ``docker_host``'s TLS files:
                :func:`embryo_bench.planning.targets.target_daemon`).
            sources: the configuration files it was merged from (:func:`load_config`): a
                refused setting is named with the file that set it.

        Raises:
            ConfigError: an invalid configuration, a ``study:`` that is unknown or that
                two of ``sources`` name differently (:func:`check_study`: a study's short
                form over another study's configuration), a target that cannot run here with
                ``on_missing_hardware: fail``, no target able to run, a sweep of a target
                that does not run, an unknown or unpriced cost base, a comparison
                base with fewer repeats of a workload than another target
                (:func:`check_base_repeats`), ``compare.max_rounds`` below the first rounds
                (:func:`check_rounds`), a ``merge:`` folder that is missing or holds no
                finished run, two ``docker_host`` values with the same file key
                (:func:`embryo_bench.planning.daemons.check_daemons`), a size or resource
                bound broken (:func:`embryo_bench.planning.bounds.check_plan`), a
                ``stability.baseline`` that cannot be used
                (:func:`embryo_bench.planning.machine_baseline.check_baseline`), a file the
                figures job would fail on
                (:func:`embryo_bench.planning.figures.check_figures_inputs`, only
                ``on_this_machine``), or a damaged round check (:func:`check_round_checks`,
                only ``on_this_machine``); the first met in that order.
            DataError: only ``on_this_machine``: a workload's offline copy (``path:``)
                without one of its dataset's files, or with a file of another size than the
                registry's and not accepted by its sha256
                (:func:`embryo_bench.planning.workloads.check_offline_copy`).
        """
        schema = schema or load_schema()
        config = load_config(config, schema, sources)
        check_study(config.get("study", ""), sources)
        if probe is None:
            probe = default_probe(hardware_check or config["hardware_check"])
        targets, skipped = resolve_targets(config, schema, probe, on_this_machine)
        main = list(targets)
        targets.update(expand_sweeps(config["sweeps"], targets))
        base, note = cost_base(config["cost"], config["targets"], main)
        compared, compare_note = compare_base(
            config["compare"], base, targets, [e["name"] for e in config["targets"]] + list(targets)
        )
        plan = cls(
            config,
            targets,
            skipped,
            base,
            note,
            compared,
            compare_note,
            on_this_machine,
            resolve_workloads(config),
        )
        # Every check a later job would make, made here, before any job (and by
        # check-config), in this order: the first error met is the one said. Those that
        # read something the jobs use (the merged runs, the daemons, the baseline) keep it.
        check_base_repeats(plan.schedule)
        check_rounds(plan.schedule)
        plan.merged_run_dirs = check_folders(
            config["merge"], plan.outdir, plan.preprocessing.to_dict()
        )
        plan.remote_daemons = daemons.check_daemons(targets)
        bounds.check_plan(plan)  # sizes, memory, disk, generator, split
        plan.baseline = machine_baseline.check_baseline(config, targets, on_this_machine)
        if on_this_machine:  # a cluster job's parse: the workflow that submitted it checked
            figures.check_figures_inputs(plan.schedule)
            check_round_checks(plan.schedule)
            for workload in plan.workloads.values():  # sizes only: reading them takes seconds
                check_offline_copy(workload)
        return plan

    # --- the runs and their rounds (schedule.Schedule's) -----------------------------------

    def workload_targets(self, workload: str) -> dict[str, Target]:
        """The targets a workload's runs train on, each with the repeats it runs of it
        (:meth:`embryo_bench.planning.schedule.Schedule.workload_targets`)."""
        return self.schedule.workload_targets(workload)

    @property
    def first_rounds(self) -> int:
        """The rounds that always run: the most repeats of any target in any workload."""
        return self.schedule.first_rounds

    @property
    def until(self) -> float:
        """``compare.until``, a fraction; 0.0 when rounds are not added."""
        return self.schedule.until

    @property
    def max_rounds(self) -> int:
        """The most rounds that may run (:attr:`Schedule.max_rounds`)."""
        return self.schedule.max_rounds

    @property
    def planned_runs(self) -> list[tuple[str, str, int]]:
        """Every run that may run, as (workload, target, repeat), in the order the rounds
        run them (:attr:`embryo_bench.planning.schedule.Schedule.planned_runs`)."""
        return self.schedule.planned_runs

    def round_runs(self, rounds: int | None = None) -> list[tuple[str, str, int]]:
        """The runs of rounds 1..``rounds`` (default: :attr:`first_rounds`), in the planned
        order.

        Raises:
            ValueError: ``rounds`` is more than :attr:`max_rounds`.
        """
        return self.schedule.round_runs(rounds)

    @property
    def all_runs(self) -> list[tuple[str, str, int]]:
        """Every run of the rounds that always run as (workload, target, repeat), in the
        planned order."""
        return self.schedule.all_runs

    def workload_runs(self, workload: str, rounds: int | None = None) -> list[tuple[str, int]]:
        """A workload's runs of rounds 1..``rounds`` (default: :attr:`first_rounds`) as
        (target, repeat), in the planned order."""
        return self.schedule.workload_runs(workload, rounds)

    def previous_run(
        self, target: str, repeat: int, workload: str = PAPER_WORKLOAD
    ) -> tuple[str, int, str] | None:
        """The run just before this one in :attr:`planned_runs`, as (target, repeat,
        workload); None for the first.

        Raises:
            KeyError: no such run.
        """
        return self.schedule.previous_run(target, repeat, workload)

    def comparison_base(self, workload: str = PAPER_WORKLOAD) -> str:
        """The target a workload's runs are compared with
        (:meth:`embryo_bench.planning.schedule.Schedule.comparison_base`)."""
        return self.schedule.comparison_base(workload)

    def round_run_dirs(self, rounds: int) -> list[str]:
        """Every run folder of every workload in rounds 1..``rounds``, in the planned order."""
        return self.schedule.round_run_dirs(rounds)

    def round_check_params(self, round_: int) -> dict:
        """What the check after round ``round_`` measures (the ``round_check`` rule's
        params; :meth:`embryo_bench.planning.schedule.Schedule.round_check_params`)."""
        return self.schedule.round_check_params(round_)

    def round_finished(self, round_: int) -> bool:
        """Every run of round ``round_`` has all its files on disk."""
        return self.schedule.round_finished(round_)

    def rounds_wanted(
        self,
        read_check: Callable[[int], dict],
        finished: Callable[[int], bool] | None = None,
    ) -> tuple[int, Decision | None]:
        """How many rounds run, and the decision after the last of them (None without
        ``compare.until``): :meth:`embryo_bench.planning.schedule.Schedule.rounds_wanted`."""
        return self.schedule.rounds_wanted(read_check, finished)

    def workload_run_dirs(self, workload: str, rounds: int | None = None) -> list[str]:
        """Every run's folder of a workload, rounds 1..``rounds`` (default:
        :attr:`first_rounds`), in the planned order."""
        return self.schedule.workload_run_dirs(workload, rounds)

    # --- what a run and a figures job are given ---------------------------------------------

    @property
    def preprocessing(self) -> Preprocessing:
        """The preprocessing settings the configuration asks for."""
        return Preprocessing.from_config(self.config)

    def spec(self, target: str, repeat: int, workload: str = PAPER_WORKLOAD) -> RunSpec:
        """The run spec of one run: the paper's workload's from ``train:`` and the target;
        another's with its recipe (batch size, epochs, learning rate) and its
        :class:`embryo_bench.vocabulary.spec.WorkloadSpec`, on the same target (cores, threads,
        backend, runner), with Keras's defaults (no ``train.variant``); each with its
        workload's accuracy target (:attr:`embryo_bench.planning.workloads.Workload.
        accuracy_target`: its entry's, its catalog entry's, ``train.accuracy_target``).

        Raises:
            KeyError: no such target or workload runs. ValueError: repeat < 1.
        """
        w = self.workloads[workload]
        train = self.config["train"]
        if w.accuracy_target is not None:
            train = {**train, "accuracy_target": w.accuracy_target}
        base = self.targets[target].spec(repeat, train, self.preprocessing)
        if not w.own_recipe:  # trained by the train section, on the shards' preprocessing
            return base
        return base.replace(
            epochs=w.epochs,
            batch_size=w.batch_size,
            learning_rate=w.learning_rate,
            preprocessing=None,
            workload=w.spec,
            **{**variant_settings({"variant": "keras"}), "epoch_steps": w.epoch_steps},
        )

    def report_targets(self) -> dict[str, dict]:
        """Target name -> :meth:`embryo_bench.planning.targets.Target.report_fields`, for the
        figures."""
        return {n: t.report_fields() for n, t in self.targets.items()}

    def figures_spec(
        self, workload: str = PAPER_WORKLOAD, rounds: int | None = None
    ) -> FiguresSpec:
        """What a workload's figures job is given (its ``figures-spec.json``): its runs of
        rounds 1..``rounds`` (default: :attr:`first_rounds`; :meth:`rounds_wanted`)
        (:func:`embryo_bench.planning.figures.figures_spec`)."""
        cost = (self.cost_base, self.cost_note)
        return figures.figures_spec(self.config, self.schedule, cost, workload, rounds)

    def workload_config(self, workload: str = PAPER_WORKLOAD) -> dict:
        """The effective configuration as a workload's figures record it
        (:func:`embryo_bench.planning.figures.workload_config`)."""
        return figures.workload_config(self.config, self.workloads, workload)

    def study_workloads(self) -> list[dict]:
        """Every workload as the study tables read it
        (:func:`embryo_bench.planning.study.study_workloads`)."""
        return study_workloads(self.config, self.workloads)

    @property
    def merge_notes(self) -> list[str]:
        """One line per unfinished run of a ``merge:`` folder, left out of the figures."""
        return figures.merge_notes(self.config)

    @property
    def baseline_notes(self) -> list[str]:
        """One line for each running target :attr:`baseline` does not judge, and one on the
        run lengths it judges; [] without a baseline."""
        return machine_baseline.baseline_notes(self.config, self.targets, self.baseline)

    # --- what the data and image rules are given (paths' functions) -----------------------

    @property
    def outdir(self) -> str:
        """The configuration's output folder."""
        return self.config["outdir"]

    @property
    def dataset_label(self) -> str:
        """How figures name the data (:func:`embryo_bench.planning.paths.dataset_label`)."""
        return paths.dataset_label(self.config["dataset"])

    @property
    def db_dir(self) -> str:
        """Where an archive (downloaded or local) is extracted."""
        return paths.db_dir(self.config)

    @property
    def download_path(self) -> str:
        """Where the database archive is downloaded to (named after the URL)."""
        return paths.download_path(self.config)

    @property
    def archive(self) -> str:
        """The archive to extract: a local archive's path, else the download's."""
        return paths.archive(self.config)

    @property
    def reads_in_place(self) -> bool:
        """The source is read where it is, not produced by the workflow."""
        return paths.reads_in_place(self.config)

    def index_inputs(self) -> dict[str, str]:
        """Files indexing waits for (:func:`embryo_bench.planning.paths.index_inputs`)."""
        return paths.index_inputs(self.config)

    def index_flags(self) -> list[str]:
        """Extra ``embryo-bench index`` options
        (:func:`embryo_bench.planning.paths.index_flags`)."""
        return paths.index_flags(self.config)

    def synthetic_flags(self) -> list[str]:
        """``embryo-bench synthesize`` options
        (:func:`embryo_bench.planning.paths.synthetic_flags`)."""
        return paths.synthetic_flags(self.config)

    def source_stamp(self) -> str:
        """Identity of a source read in place; "" for sources the workflow produces."""
        return paths.source_stamp(self.config)

    def data_params(self, workload: str) -> dict:
        """How a workload's arrays are made (the ``workload_data`` rule's params).

        Raises:
            KeyError: no such workload, or the paper's (whose data is the shards).
        """
        return paths.data_params(self.workloads[workload])

    def dataset_files(self, workload: str) -> list[str]:
        """The files a workload's arrays are made from
        (:func:`embryo_bench.planning.paths.dataset_files`)."""
        return paths.dataset_files(self.outdir, self.workloads[workload])

    def dataset_file(self, dataset: str, name: str) -> registry.DatasetFile:
        """A downloadable file of a dataset (the ``dataset_file`` rule's URL and checksum).

        Raises:
            KeyError: the dataset has no such file.
        """
        return paths.dataset_file(dataset, name)

    def image_tag(self, image: str) -> str:
        """The tag of a project image, e.g. ``embryo-bench/cpu:0.1.0``."""
        return paths.image_tag(self.config, image)

    def image_inputs(self, image: str) -> dict[str, str]:
        """Records an image build waits for (:func:`embryo_bench.planning.paths.image_inputs`)."""
        return paths.image_inputs(self.config, image)

    def image_record(self, target: str) -> list[str]:
        """The image record a docker target's runs need
        (:func:`embryo_bench.planning.daemons.image_record`); [] for host targets."""
        return daemons.image_record(self.outdir, self.targets[target])

    def daemon_record(self, target: str) -> list[str]:
        """The daemon record a docker target with a ``docker_host`` needs
        (:func:`embryo_bench.planning.daemons.daemon_record`); [] for other targets."""
        return daemons.daemon_record(self.outdir, self.targets[target])
