"""The README's examples of enqueueing from each stack run as written, each in a process of its
own as an application would run it, against a database of their own: each leaves its jobs and
its order committed. A code block runs when the line above it is `<!-- example: NAME -->`."""

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


def examples() -> dict[str, str]:
    return {m["name"]: m["code"] for m in MARKED.finditer((REPO / "README.md").read_text())}


def test_the_readme_marks_an_example_for_every_stack() -> None:
    assert set(examples()) == {
        "shop/stages.py",
        "psycopg",
        "fastapi",
        "sqlalchemy",
        "django",
        "test_shop.py",
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
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "stages.py").write_text(code["shop/stages.py"])
    script = tmp_path / f"{name}_example.py"
    script.write_text(code[name] + DRIVERS.get(name, ""))
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=environment(db_url, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    jobs = conn.execute("SELECT count(*) FROM pipeline.jobs WHERE type = 'resize'").fetchone()
    orders = conn.execute("SELECT count(*) FROM orders").fetchone()
    assert (jobs, orders) == tuple((n,) for n in EXPECTED[name])


def test_the_readme_test_of_an_application_passes_with_pytest_and_drains_its_run(
    db_url: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    code = examples()
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "stages.py").write_text(code["shop/stages.py"])
    (tmp_path / "test_shop.py").write_text(code["test_shop.py"])
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_shop.py"],
        cwd=tmp_path,
        env=environment(db_url, tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    done = conn.execute("SELECT type, status FROM pipeline.jobs ORDER BY id").fetchall()
    assert done == [("resize", "done"), ("publish", "done")]


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
