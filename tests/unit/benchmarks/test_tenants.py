"""The tenants benchmark's throughput rounds: the order of the drains, and the reset before each."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from benchmarks import tenants


def test_every_second_round_drains_the_configurations_in_reversed_order() -> None:
    configs: list[tenants.Config] = [("a", [None], None), ("b", ["t"], None), ("c", ["t"], 4)]
    assert [label for label, _, _ in tenants.in_turn(configs, 1)] == ["a", "b", "c"]
    assert [label for label, _, _ in tenants.in_turn(configs, 2)] == ["c", "b", "a"]
    assert [label for label, _, _ in tenants.in_turn(configs, 3)] == ["a", "b", "c"]


def test_throughput_resets_the_tables_before_every_drain_and_alternates_the_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(tenants, "reset", lambda conn: calls.append("reset"))

    def drain(
        conn: Any, url: str, home: Path, args: Any, batch: list[Any], cap: int | None, label: str
    ) -> tuple[float, float, float]:
        calls.append(label)
        return 100.0, 0.01, 0.02

    monkeypatch.setattr(tenants, "metered_drain", drain)
    args = argparse.Namespace(big=20, small=0, cap=1000, rounds=2)
    tenants.throughput(None, "", Path(), args)  # type: ignore[arg-type]
    labels = [
        "no tenants",
        "10 tenants, fair",
        "10 tenants, fair, cap 1000",
        "10 tenants, fair, cap 4 (binds)",
    ]
    drains = [*labels, *reversed(labels)]
    assert calls == [step for label in drains for step in ("reset", label)]
