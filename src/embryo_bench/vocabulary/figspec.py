"""The figures job's settings as one file, ``figures-spec.json``, as
``run.json`` is a run's: which runs (in the planned order) and which other machines' result
folders, the targets' report fields (prices, paper systems, sweep points), cost and
comparison bases, the stability thresholds, the machine baseline, and the effective
configuration (written beside the figures as ``config.yaml``). A small rule writes it from the
plan (:meth:`embryo_bench.planning.plan.Plan.figures_spec`); ``embryo-bench figures --spec`` reads
and
checks it; merging reads another folder's spec for its targets' prices.

The file carries the sha256 of its own content (``digest``): a spec edited
by hand was used in silence, and a price changed there would never reach the configuration;
now it is refused, naming the file (edit the configuration instead).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from pydantic import ValidationError

from ..errors import ConfigError, DataError
from ..io import check_format, non_finite, read_json, write_json
from .config import apply_defaults, load_schema
from .layout import FIGURES_SPEC_FORMAT
from .records import Record, first_error, key_errors, subschema

#: The first format whose files carry their ``digest`` (older ones are read without one).
DIGEST_FROM_FORMAT = 2


def content_digest(d: dict) -> str:
    """Hex sha256 of a spec's content: ``d`` without its ``digest``, as sorted, compact JSON
    (so the digest does not depend on the file's layout)."""
    rest = {k: v for k, v in d.items() if k != "digest"}
    text = json.dumps(rest, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class FiguresSpec(Record):
    """What the figures job is given.

    Attributes:
        runs: this workflow's run folders, in the planned order (:meth:`Plan.workload_run_dirs`).
        merge: other machines' result folders (``merge:``).
        targets: target name -> report fields
        (:meth:`embryo_bench.planning.targets.Target.report_fields`:
            hourly_usd in USD/h, price_source, paper_system, description, sweep).
        cost_base, cost_note: :func:`embryo_bench.planning.bases.cost_base`.
        compare_base: :attr:`embryo_bench.planning.plan.Plan.compare_base`.
        min_difference: ``compare.min_difference`` (a fraction).
        stability: the ``stability`` section with every default (its ``baseline``: a machine
            baseline's path, "" for none).
        config: the effective configuration (every default filled in).

    Raises:
        pydantic.ValidationError: a value of the wrong type.
    """

    runs: list[str]
    merge: list[str]
    targets: dict
    cost_base: str
    cost_note: str
    compare_base: str
    min_difference: float
    stability: dict
    config: dict

    def to_dict(self) -> dict:
        """Plain, JSON-ready dict with the file's ``format``
        (:data:`embryo_bench.vocabulary.layout.FIGURES_SPEC_FORMAT`) and ``digest``
        (:func:`content_digest`)."""
        d = {"format": FIGURES_SPEC_FORMAT, **self.model_dump()}
        return {**d, "digest": content_digest(d)}

    @classmethod
    def from_dict(cls, d: dict, where: str = "figures spec") -> FiguresSpec:
        """The inverse of :meth:`to_dict`, checked.

        Raises:
            DataError: naming ``where`` and the key: not a mapping, a newer ``format``, a key
                missing or unknown, a value of the wrong type, a run listed twice, a run of a
                target ``targets`` does not list, a cost or comparison base that is not the
                target of one of its runs, a ``stability`` or ``min_difference`` value the
                configuration schema refuses, or content that does not match its ``digest``
                (edited after the workflow wrote it; a spec of format
                :data:`DIGEST_FROM_FORMAT` or later must carry one).
        """
        if not isinstance(d, dict):
            raise DataError(f"{where}: expected a mapping, found {type(d).__name__}")
        version = d.get("format", 0)
        body = check_format(d, FIGURES_SPEC_FORMAT, where)
        digest = body.pop("digest", None)
        try:
            spec = cls.model_validate(body)
        except ValidationError as exc:
            raise DataError(f"{where}: {_wrong(exc, body)}") from None
        if not body["runs"]:
            raise DataError(f"{where}: runs is empty; the figures need at least one run")
        _check_runs(body, where)
        _check_settings(body, where)
        if version >= DIGEST_FROM_FORMAT and digest != content_digest(d):
            why = "it carries no digest" if digest is None else "its digest does not match"
            raise DataError(
                f"{where} was edited after the workflow wrote it ({why}); edit the "
                "configuration instead"
            )
        return spec

    @classmethod
    def read(cls, path: str | os.PathLike, current: bool = False) -> FiguresSpec:
        """Read a ``figures-spec.json``; with ``current``, only one of the format this
        workflow writes (the figures job's own spec: an older one is always written again
        first, since its digest is a param of the ``figures_spec`` rule, so an older format
        there means a file edited by hand with its digest and format taken out).

        Raises:
            DataError: missing, not JSON, an older format with ``current``, or as
                :meth:`from_dict`.
        """
        d = read_json(path)
        if current and isinstance(d, dict) and d.get("format", 0) != FIGURES_SPEC_FORMAT:
            raise DataError(
                f"{path}: format {d.get('format', 0)}, not the {FIGURES_SPEC_FORMAT} this "
                "workflow writes: edited by hand (edit the configuration instead); delete it "
                "to have the workflow write it again"
            )
        return cls.from_dict(d, str(path))

    def write(self, path: str | os.PathLike, log: str | os.PathLike | None = None) -> None:
        """Write this spec (atomically) and, with ``log``, one line saying what it holds."""
        write_json(path, self.to_dict())
        if log is not None:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
            Path(log).write_text(
                f"{path}: {len(self.runs)} runs, {len(self.targets)} targets, merge: "
                f"{self.merge or 'none'}\n"
            )


def check_written_spec(path: str | os.PathLike) -> None:
    """The ``figures-spec.json`` already on disk, if any, checked before any job: the
    workflow rewrites it only when the configuration changes it, so a spec
    edited by hand or garbled would otherwise reach the figures job, which would fail.

    Raises:
        ConfigError: as :meth:`FiguresSpec.read`, and how to have it written again.
    """
    if not Path(path).is_file():
        return
    try:
        FiguresSpec.read(path)
    except DataError as exc:
        raise ConfigError(f"{exc}; delete {path} to have the workflow write it again") from None


def write_spec(spec: dict, output, log) -> None:
    """The ``figures_spec`` rule's body: check ``spec`` (:meth:`FiguresSpec.from_dict`) and
    write it to ``output[0]``, with a line in ``log[0]``.

    Raises:
        DataError: as :meth:`FiguresSpec.from_dict`.
    """
    FiguresSpec.from_dict(spec, str(output[0])).write(output[0], log=log[0])


#: How a figures spec's messages name a JSON schema's types (as Python's).
KINDS = {"array": "list", "object": "dict", "string": "str", "number": "float"}


def _wrong(exc: ValidationError, body: dict) -> str:
    """What is wrong with the figures spec ``body`` by ``exc``, in words: its unknown or
    missing keys first, else its first wrong value and the type expected."""
    if (keys := key_errors(exc)) is not None:
        kind, names, _ = keys
        return f"{kind} keys {names}"
    path, value = first_error(exc, body)
    key = path[0]
    if non_finite(value) is not None:  # as the configuration's reader words it
        return f"{key}: {value!r}: expected a finite number, not NaN or infinity"
    if len(path) > 1:  # an item of runs or merge
        return f"{key} must list folders (strings), got {body[key]!r}"
    schema = FiguresSpec.model_json_schema()
    return f"{key} is {value!r}; expected a {KINDS[subschema(schema, path)['type']]}"


def _run_target(folder: str) -> str:
    """The target of a run folder ``.../train/<target>/repeat-<k>``."""
    return Path(folder).parent.name


def _check_runs(body: dict, where: str) -> None:
    """Each run once, of a target the spec lists; the cost and comparison bases among the
    runs' targets (the figures pair every run with its round's base run).

    Raises:
        DataError: naming ``where``, the key and the run or target.
    """
    seen = set()
    for run in body["runs"]:
        if run in seen:
            raise DataError(f"{where}: runs lists {run} twice; each run is listed once")
        seen.add(run)
        if _run_target(run) not in body["targets"]:
            raise DataError(
                f"{where}: runs: {run} is a run of target {_run_target(run)}, which targets "
                f"does not list (targets: {', '.join(body['targets']) or 'none'})"
            )
    ran = list(dict.fromkeys(_run_target(r) for r in body["runs"]))
    for key in ("cost_base", "compare_base"):
        if body[key] and body[key] not in ran:
            raise DataError(
                f"{where}: {key} {body[key]!r} is not the target of any of its runs "
                f"(runs of: {', '.join(ran)})"
            )


def _check_settings(body: dict, where: str) -> None:
    """``stability`` and ``min_difference`` as the configuration schema has them.

    Raises:
        DataError: naming ``where`` and the setting (e.g. ``stability.window_cv``).
    """
    schema = load_schema()
    try:
        apply_defaults(body["stability"], schema["properties"]["stability"])
    except ConfigError as exc:
        raise DataError(f"{where}: stability.{exc}") from None
    compare = schema["properties"]["compare"]["properties"]["min_difference"]
    try:
        apply_defaults(
            {"min_difference": body["min_difference"]}, {"properties": {"min_difference": compare}}
        )
    except ConfigError as exc:
        raise DataError(f"{where}: {exc}") from None
