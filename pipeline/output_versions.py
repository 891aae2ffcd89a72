"""A run's output versions: which generations of each stage's outputs it keeps, the code version
that made each, and two of them side by side (`pipeline runs diff`, the dashboard's run page).

A generation is 0 for the run as it first ran and k for its k-th rerun (pg_pipeline.rerun); a
code version is what StageSpec.code_version said when the output was stored (NULL for outputs
stored before versions were recorded). Two versions are compared part by part (a stage's parts
aligned by part number, the outputs of a stage without parts by their jobs' order), and two JSON
objects field by field.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pg_pipeline.errors import PipelineError
from pg_pipeline.plans import Plan, Rows, Statement, Steps, sync_api
from pg_pipeline.queries import Q

#: how a version selector names a generation explicitly: "generation:2" ("gen:2" too)
_GENERATION_PREFIXES = ("generation:", "gen:")


class NoSuchVersion(PipelineError, ValueError):
    """A run, stage or version a reader asked for that is not stored; the message says which."""


@dataclass(frozen=True)
class OutputVersion:
    """One generation of a stage's outputs in a run."""

    stage: str
    generation: int
    code_version: str | None  #: None: stored before code versions were recorded
    outputs: int
    stored_at: datetime
    #: the stage the rerun that made this generation started from; None for generation 0
    rerun_from: str | None = None

    @property
    def label(self) -> str:
        return f"generation {self.generation} ({self.code_version or 'unversioned'})"


def output_versions_plan(
    run_id: int, stage: str | None = None, *, tenant: str | None = None
) -> Plan[list[OutputVersion] | None]:
    """The run's output versions, per stage (only `stage`'s when given) and generation, oldest
    first; None when there is no such run (of `tenant`, when given)."""
    return Plan(_versions(run_id, stage, tenant))


def _versions(
    run_id: int, stage: str | None, tenant: str | None
) -> Steps[list[OutputVersion] | None]:
    found = yield Statement(Q["run_tenant"], {"run_id": run_id})
    if not found or (tenant is not None and found[0][0] != tenant):
        return None
    rows = yield Statement(Q["output_versions"], {"run_id": run_id, "stage": stage})
    return [OutputVersion(r[0], int(r[1]), r[2], int(r[3]), r[4], r[5]) for r in rows]


@dataclass(frozen=True)
class FieldDiff:
    field: str
    left: Any  #: None when the field is missing on that side (see in_left/in_right)
    right: Any
    in_left: bool = True
    in_right: bool = True

    @property
    def changed(self) -> bool:
        return self.in_left != self.in_right or self.left != self.right


@dataclass(frozen=True)
class PartDiff:
    """One part (or, for a stage without parts, one job's output by order) in both versions."""

    part: int | None
    left: Any  #: None when this version has no such part
    right: Any
    #: field by field when both sides are JSON objects; None otherwise
    fields: list[FieldDiff] | None

    @property
    def changed(self) -> bool:
        return bool(self.left != self.right)

    @property
    def changed_fields(self) -> list[FieldDiff]:
        return [f for f in self.fields or [] if f.changed]


@dataclass(frozen=True)
class OutputDiff:
    run_id: int
    stage: str
    left: OutputVersion
    right: OutputVersion
    parts: list[PartDiff]

    @property
    def changed(self) -> bool:
        return any(p.changed for p in self.parts)


def diff_outputs_plan(
    run_id: int,
    stage: str,
    versions: tuple[str, str] | None = None,
    *,
    tenant: str | None = None,
) -> Plan[OutputDiff]:
    """Two versions of `stage`'s outputs in the run side by side: `versions` (left, right),
    each a code version or a generation ("generation:N", or just N when no code version is
    spelled so), by default the two newest generations. NoSuchVersion when the run, the stage's
    outputs or a version is not there, or there is one version only; ValueError for arguments
    that cannot name one (checked before anything is sent, as a rerun's are)."""
    if isinstance(run_id, bool) or not isinstance(run_id, int) or run_id < 1:
        raise ValueError(f"run_id must be a positive integer, not {run_id!r}")
    # A NUL would reach PostgreSQL and come back as a DataError, not a refusal.
    if not isinstance(stage, str) or not stage or "\x00" in stage:
        raise ValueError(f"stage must be a stage's name, not {stage!r}")
    return Plan(_diff(run_id, stage, versions, tenant))


def _diff(
    run_id: int, stage: str, versions: tuple[str, str] | None, tenant: str | None
) -> Steps[OutputDiff]:
    found = yield from _versions(run_id, stage, tenant)
    if found is None:
        rows = yield Statement(Q["run_of_job"], {"job_id": run_id})
        if rows and (tenant is None or rows[0][1] == tenant):
            raise NoSuchVersion(
                f"job {run_id} is inside run {rows[0][0]}, not a run's first job: name the "
                f"run {rows[0][0]}"
            )
        whose = "" if tenant is None else f" of tenant {tenant!r}"
        raise NoSuchVersion(f"there is no run {run_id}{whose}")
    if not found:
        raise NoSuchVersion(f"run {run_id} has no stored outputs of stage {stage!r}")
    if versions is None:
        if len(found) < 2:
            raise NoSuchVersion(
                f"stage {stage!r} of run {run_id} has one output version only "
                f"({found[0].label}): rerun it (`pipeline runs rerun`) to make another"
            )
        left, right = found[-2], found[-1]
    else:
        left, right = (pick_version(found, v) for v in versions)
    sides = []
    for version in (left, right):
        params = {"run_id": run_id, "stage": stage, "generation": version.generation}
        sides.append((yield Statement(Q["run_generation_outputs"], params)))
    return OutputDiff(run_id, stage, left, right, diff_parts(sides[0], sides[1]))


def pick_version(found: list[OutputVersion], selector: str) -> OutputVersion:
    """The version `selector` names among `found` (one stage's, oldest first): the newest
    generation made by that code version, else the generation it numbers."""
    text = selector.strip()
    for prefix in _GENERATION_PREFIXES:
        if text.lower().startswith(prefix):
            return _generation(found, text[len(prefix) :], selector)
    by_code = [v for v in found if v.code_version == text]
    if by_code:
        return by_code[-1]
    if text.isdigit():
        return _generation(found, text, selector)
    raise NoSuchVersion(f"no output version {selector!r}; there are: {_known(found)}")


def _generation(found: list[OutputVersion], number: str, selector: str) -> OutputVersion:
    for version in found:
        if number.isdigit() and version.generation == int(number):
            return version
    raise NoSuchVersion(f"no output version {selector!r}; there are: {_known(found)}")


def _known(found: list[OutputVersion]) -> str:
    return ", ".join(v.label for v in found)


def diff_parts(left: Rows, right: Rows) -> list[PartDiff]:
    """Rows of (part, job_id, code_version, output) of two versions, aligned: by part, and the
    outputs without a part by their jobs' order."""
    a, b = _keyed(left), _keyed(right)
    keys = list(a) + [k for k in b if k not in a]
    parts = []
    for key in keys:
        lo, ro = a.get(key), b.get(key)
        fields = diff_fields(lo, ro) if isinstance(lo, dict) and isinstance(ro, dict) else None
        parts.append(PartDiff(key[1] if key[0] == "part" else None, lo, ro, fields))
    return parts


def _keyed(rows: Rows) -> dict[tuple[str, int], Any]:
    keyed: dict[tuple[str, int], Any] = {}
    unparted = 0
    for part, _job_id, _version, output in rows:
        if part is None:
            keyed[("job", unparted)] = output
            unparted += 1
        else:
            keyed[("part", int(part))] = output
    return keyed


def diff_fields(left: dict[str, Any], right: dict[str, Any]) -> list[FieldDiff]:
    """Two JSON objects field by field, in the left's order and then the right's new fields."""
    names = list(left) + [n for n in right if n not in left]
    return [FieldDiff(n, left.get(n), right.get(n), n in left, n in right) for n in names]


output_versions = sync_api(output_versions_plan)
diff_outputs = sync_api(diff_outputs_plan)
