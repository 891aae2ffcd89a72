"""Schedules as code declares them: `schedule()` checks a definition and adds it to the registry
(SCHEDULES by default) at import time; each worker writes the registry to the table when it
starts (pipeline/schedules/table.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pydantic import BaseModel

from pg_pipeline import inputs
from pg_pipeline.errors import PayloadTooLarge
from pg_pipeline.schedules.checks import InvalidSchedule, check_catch_up, check_name
from pg_pipeline.schedules.timing import Timing
from pg_pipeline.stage import REGISTRY, Registry
from pg_pipeline.validation import check_payload_size, storable_json


@dataclass(frozen=True)
class Schedule:
    """One schedule's definition, as code declares it or `pipeline schedule add` gives it."""

    name: str
    stage: str
    timing: Timing
    payload: Any = field(default_factory=dict)
    tenant_id: str | None = None
    catch_up: int = 1

    @classmethod
    def define(
        cls,
        name: str,
        *,
        stage: str,
        cron: str | None = None,
        every: float | timedelta | None = None,
        payload: Any = None,
        tenant_id: str | int | None = None,
        timezone: str | None = None,
        catch_up: int = 1,
    ) -> Schedule:
        """A checked definition: everything but the stage, which may not be imported yet."""
        if isinstance(payload, BaseModel):
            payload = payload.model_dump(mode="json")
        payload = {} if payload is None else payload
        if not isinstance(stage, str) or not stage:
            raise InvalidSchedule(f"schedule {name!r} needs a stage")
        try:
            # Each fire enqueues it: what enqueue would refuse is refused now, once.
            check_payload_size(storable_json(inputs.payload(payload)), stage)
            tenant = None if tenant_id is None else inputs.tenant_id(tenant_id)
        except (ValueError, PayloadTooLarge) as exc:
            raise InvalidSchedule(f"schedule {name!r}: {exc}") from None
        return cls(
            name=check_name(name),
            stage=stage,
            timing=Timing.of(cron=cron, every=every, timezone=timezone),
            payload=payload,
            tenant_id=tenant,
            catch_up=check_catch_up(catch_up),
        )

    def check(self, stages: Registry) -> None:
        """UnknownStage, or InvalidPayload with pydantic's message, when `stages` cannot run
        it. The stored payload stays as given: each fire validates it again, so defaults the
        model gains later apply to later jobs."""
        stages.get(self.stage).validate(self.payload)


class ScheduleRegistry:
    """Schedule name to definition; `schedule()` fills the default one at import time."""

    def __init__(self) -> None:
        self._schedules: dict[str, Schedule] = {}

    def add(self, item: Schedule) -> None:
        existing = self._schedules.get(item.name)
        # The same declaration imported twice (a module reloaded) is harmless; two different
        # ones under one name would silently overwrite each other in the database.
        if existing is not None and existing != item:
            raise ValueError(f"schedule {item.name!r} is declared twice, differently")
        self._schedules[item.name] = item

    def names(self) -> list[str]:
        return sorted(self._schedules)

    def __iter__(self) -> Iterator[Schedule]:
        return iter([self._schedules[n] for n in self.names()])

    def __len__(self) -> int:
        return len(self._schedules)

    def __contains__(self, name: object) -> bool:
        return name in self._schedules


SCHEDULES = ScheduleRegistry()


def schedule(
    name: str,
    *,
    stage: str,
    cron: str | None = None,
    every: float | timedelta | None = None,
    payload: Any = None,
    tenant_id: str | int | None = None,
    timezone: str | None = None,
    catch_up: int = 1,
    registry: ScheduleRegistry | None = None,
    stages: Registry | None = None,
) -> Schedule:
    """Declare a recurring job; a worker writes it to the database when it starts.

    `cron` is a cron expression (five fields, six with seconds first, or `@daily` and friends)
    read in `timezone` (an IANA name, default UTC); `every` is a period in seconds (or a
    timedelta). `catch_up` is how many fire times missed while no worker ran are still
    enqueued, the latest ones (default 1: the latest missed one). A bad definition raises
    InvalidSchedule here; the payload is checked against the stage now if the stage is
    registered already, and otherwise when the worker syncs.
    """
    item = Schedule.define(
        name,
        stage=stage,
        cron=cron,
        every=every,
        payload=payload,
        tenant_id=tenant_id,
        timezone=timezone,
        catch_up=catch_up,
    )
    known = stages if stages is not None else REGISTRY
    if item.stage in known:
        item.check(known)
    (registry if registry is not None else SCHEDULES).add(item)
    return item
