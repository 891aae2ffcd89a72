"""The README's examples, and docs/stacks.md's of enqueueing from each stack, run as written,
each in a process of its own as an application would run it, against a database of their own:
each leaves its jobs and its order committed. A code block runs when the line above it is
`<!-- example: NAME -->`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.support.paths import REPO

MARKED = re.compile(r"^<!-- example: (?P<name>\S+) -->\n```python\n(?P<code>.*?)^```$", re.S | re.M)

#: What the test does with what an example defines, when it defines an app rather than acts.
DRIVERS = {
    "fastapi": """
from starlette.testclient import TestClient

with TestClient(app) as client:
    job = client.post("/orders", params={"image_key": "a.png", "width": 200}).json()["job"]
    assert client.get(f"/orders/{job}").json() == {"resize": {"queued": 1}}
""",
}
#: Jobs and orders each example leaves committed.
EXPECTED = {"psycopg": (1, 1), "fastapi": (1, 1), "sqlalchemy": (2, 1), "django": (1, 1)}


#: Where the marked examples are: the README, and the page its stack examples moved to.
DOCUMENTS = ("README.md", "docs/stacks.md")


def examples() -> dict[str, str]:
    return {
        m["name"]: m["code"]
        for document in DOCUMENTS
        for m in MARKED.finditer((REPO / document).read_text())
    }


def test_the_readme_marks_an_example_for_every_stack() -> None:
    assert set(examples()) == {
        "shop/stages.py",
        "psycopg",
        "fastapi",
        "sqlalchemy",
        "django",
        "test_shop.py",
        "shop/review.py",
        "review-signal",
    }


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute("CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL)")
        yield c


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_readme_example_runs_and_commits_its_jobs_with_its_order(
    name: str, db_url: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    code = examples()
    files = {
        "shop/stages.py": code["shop/stages.py"],
        "example.py": code[name] + DRIVERS.get(name, ""),
    }
    result = run_in_shop(tmp_path, db_url, files, "example.py")
    assert result.returncode == 0, result.stderr
    jobs = conn.execute("SELECT count(*) FROM pipeline.jobs WHERE type = 'resize'").fetchone()
    orders = conn.execute("SELECT count(*) FROM orders").fetchone()
    assert (jobs, orders) == tuple((n,) for n in EXPECTED[name])


def test_the_readme_test_of_an_application_passes_with_pytest_and_drains_its_run(
    db_url: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    code = examples()
    files = {"shop/stages.py": code["shop/stages.py"], "test_shop.py": code["test_shop.py"]}
    pytest_args = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_shop.py")
    result = run_in_shop(tmp_path, db_url, files, *pytest_args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    done = conn.execute("SELECT type, status FROM pipeline.jobs ORDER BY id").fetchall()
    assert done == [("resize", "done"), ("publish", "done")]


#: Around the README's signal example: an invoice's run waits for approval before it, and
#: resumes after it with the answer it gave.
REVIEW_BEFORE = """
import pg_pipeline
import shop.review  # noqa: F401  registers the stage
from pg_pipeline.testing import drain

with pg_pipeline.connect() as conn:
    run_id = pg_pipeline.enqueue(conn, "approve_invoice", {"number": "F-7", "total": 120.0})
assert drain(pg_pipeline.database_url(), app="shop.review").waiting == [run_id]
"""
REVIEW_AFTER = """
assert drain(pg_pipeline.database_url(), app="shop.review").done == [run_id]
with pg_pipeline.connect() as conn:
    answer = pg_pipeline.run_output(conn, run_id, "approve_invoice")
assert answer == {"approved": True, "note": "ok"}, answer
"""


def test_the_readme_wait_example_waits_for_its_signal_and_resumes_with_it(
    db_url: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    code = examples()
    files = {
        "shop/review.py": code["shop/review.py"],
        "example.py": REVIEW_BEFORE + code["review-signal"] + REVIEW_AFTER,
    }
    result = run_in_shop(tmp_path, db_url, files, "example.py")
    assert result.returncode == 0, result.stdout + result.stderr
    # What the stage recorded for the reviewer (jsonb orders keys its own way).
    assert "'number': 'F-7'" in result.stdout and "'approved': True" in result.stdout


def run_in_shop(
    path: Path, db_url: str, files: dict[str, str], *argv: str
) -> subprocess.CompletedProcess[str]:
    """Python run with `argv` in `path`, an application of `files` (by path) in a package
    `shop`, as a deployment would run it."""
    (path / "shop").mkdir()
    (path / "shop" / "__init__.py").write_text("")
    for name, text in files.items():
        (path / name).write_text(text)
    return subprocess.run(
        [sys.executable, *argv],
        cwd=path,
        env=environment(db_url, path),
        capture_output=True,
        text=True,
        timeout=120,
    )


def environment(db_url: str, path: Path) -> dict[str, str]:
    """What a deployment would set: DATABASE_URL, SQLAlchemy's URL, libpq's PG* variables."""
    parts = {key: str(value) for key, value in conninfo_to_dict(db_url).items()}
    query = "&".join(f"{k}={parts[k]}" for k in ("host", "port") if k in parts)
    user = parts.get("user", "") + (f":{parts['password']}" if "password" in parts else "")
    libpq = {
        f"PG{key.upper()}": parts[name]
        for key, name in (
            ("host", "host"),
            ("port", "port"),
            ("user", "user"),
            ("password", "password"),
            ("database", "dbname"),
        )
        if name in parts
    }
    return {
        **os.environ,
        **libpq,
        "DATABASE_URL": make_conninfo(db_url),
        "SQLALCHEMY_URL": f"postgresql+psycopg://{user}@/{parts['dbname']}?{query}",
        "PYTHONPATH": os.pathsep.join([str(path), str(REPO)]),
    }
