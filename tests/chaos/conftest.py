"""Chaos tests: real workers, real signals, a real PostgreSQL. Each scenario reports one line,
printed in the terminal summary so that it shows in CI's output even under `pytest -q`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.acceptance.cli import cli_env
from tests.chaos.fleet import Fleet
from tests.support.apps.chaos_app import CHAOS_EFFECTS_DDL

APP = "tests.support.apps.chaos_app"
#: every worker serves only the chaos stages, so it does not import the document stages
STAGES = ("--stage", "chaos_sleep", "--stage", "chaos_ack", "--stage", "chaos_poison")

Report = Callable[..., str]
_LINES = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chaos: kills workers and restarts PostgreSQL under load")
    config.stash[_LINES] = []


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    lines = config.stash.get(_LINES, [])
    if lines:
        terminalreporter.write_sep("-", "chaos summary")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def chaos_report(request: pytest.FixtureRequest) -> Report:
    """report(scenario, key=value, ...) keeps one summary line for the end of the run;
    `why`, when not empty, follows it indented (what charged an innocent job, say)."""

    def report(scenario: str, why: str = "", **fields: Any) -> str:
        line = f"chaos {scenario}: " + " ".join(f"{k}={v}" for k, v in fields.items())
        if why:
            line += f"\n    {why}"
        request.config.stash[_LINES].append(line)
        print(line)  # also in the test's captured output, shown if it fails
        return line

    return report


def chaos_env(db_url: str, home: Path) -> dict[str, str]:
    return cli_env(db_url, home, PIPELINE_APP=APP, PIPELINE_LOG_LEVEL="INFO")


@pytest.fixture
def chaos_conn(db_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(CHAOS_EFFECTS_DDL)
        yield c


@pytest.fixture
def fleet(db_url: str, tmp_path: Path) -> Iterator[Fleet]:
    """Workers on the test's database; every one of them (and its children) killed at the end."""
    workers = Fleet(chaos_env(db_url, tmp_path / "home"), tmp_path, *STAGES)
    try:
        yield workers
    finally:
        workers.close()
