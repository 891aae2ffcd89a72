"""An application whose own packages are named `pipeline` and `stages` runs its stages: the
framework is imported as `pg_pipeline` and the documents app as `pg_pipeline_documents`, so
neither shadows the application's packages nor is shadowed by them."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import psycopg

import pg_pipeline
from tests.acceptance.cli import WorkerProcess, cli_env, run_cli
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]

OWN_PIPELINE = '''"""The shop's own pipeline package, which has nothing to do with pg-pipeline."""
KIND = "the shop's own pipeline"
'''

BILLING = """
from pydantic import BaseModel

import pg_pipeline
import pipeline  # the shop's own package, found before anything installed
from stages.prices import total  # the shop's own stages package


class Order(BaseModel):
    order_id: int
    items: list[int]


class Bill(BaseModel):
    order_id: int
    total: int
    kind: str


@pg_pipeline.stage("bill")
def bill(order: Order, ctx: pg_pipeline.Context) -> Bill:
    return Bill(order_id=order.order_id, total=total(order.items), kind=pipeline.KIND)
"""


def shop(root: Path) -> Path:
    (root / "pipeline").mkdir(parents=True)
    (root / "pipeline" / "__init__.py").write_text(OWN_PIPELINE)
    (root / "stages").mkdir()
    (root / "stages" / "__init__.py").write_text("")
    (root / "stages" / "prices.py").write_text("def total(items):\n    return sum(items)\n")
    (root / "stages" / "billing.py").write_text(BILLING)
    return root


def test_an_application_with_its_own_pipeline_and_stages_packages_runs_its_stages(
    db_url: str, tmp_path: Path
) -> None:
    app = shop(tmp_path / "shop")
    env = cli_env(db_url, tmp_path / "home", PIPELINE_APP="stages.billing", PYTHONPATH=str(app))

    enqueued = run_cli(env, "enqueue", "bill", '{"order_id": 7, "items": [3, 4]}', cwd=app)
    assert enqueued.returncode == 0, enqueued.stderr
    job_id = int(enqueued.stdout)
    worker = WorkerProcess(env, tmp_path / "worker.log", "--stage", "bill", cwd=app)
    try:
        with psycopg.connect(db_url, autocommit=True) as conn:
            wait_for(
                lambda: (
                    conn.execute(
                        "SELECT status FROM pipeline.jobs WHERE id = %s", (job_id,)
                    ).fetchone()
                    in {("done",), ("failed",)}
                ),
                what="the shop's job to finish",
            )
            [(status, last_error)] = conn.execute(
                "SELECT status, last_error FROM pipeline.jobs WHERE id = %s", (job_id,)
            ).fetchall()
            assert (status, last_error) == ("done", None), worker.log()
            output = pg_pipeline.run_output(conn, job_id, "bill")
        assert output == {"order_id": 7, "total": 7, "kind": "the shop's own pipeline"}
        worker.signal(signal.SIGTERM)
        assert worker.wait() == 0, worker.log()
    finally:
        worker.close()
