from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.acceptance.cli import WorkerProcess, cli_env
from tests.support.apps.jobs_app import EFFECTS_DDL

pytestmark = pytest.mark.acceptance


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    return cli_env(db_url, tmp_path / "home")


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        yield c


@pytest.fixture
def start_worker(env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(*args: str, environ: dict[str, str] | None = None) -> WorkerProcess:
        worker = WorkerProcess(environ or env, tmp_path / f"worker-{len(started)}.log", *args)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.close()
