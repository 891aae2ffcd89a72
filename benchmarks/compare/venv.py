"""The benchmark's own virtualenv, with the competitors from PyPI (created on first use)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / "benchmarks" / ".venv-compare"
# Current majors on PyPI when this was written: PgQueuer 1.6, Procrastinate 3.10. uvloop is what
# `pgq run` picks up when it is installed; psutil is not needed (we read /proc).
REQUIREMENTS = [
    "pgqueuer>=1.6,<2",
    "asyncpg>=0.29",
    "uvloop>=0.19",
    "procrastinate[psycopg]>=3.10,<4",
    "psycopg[binary]>=3.2",
]


def python() -> Path:
    """The venv's interpreter, creating the venv and installing the requirements if needed."""
    exe = VENV / "bin" / "python"
    marker = VENV / "requirements.txt"
    wanted = "\n".join(REQUIREMENTS) + "\n"
    if exe.exists() and marker.exists() and marker.read_text() == wanted:
        return exe
    print(f"creating {VENV} with {', '.join(REQUIREMENTS)}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(exe), "-m", "pip", "install", "-q", *REQUIREMENTS], check=True)
    marker.write_text(wanted)
    return exe


def versions(exe: Path) -> dict[str, str]:
    """Installed versions of the packages that matter, as the venv's pip sees them."""
    code = (
        "import importlib.metadata as m\n"
        "for n in ('pgqueuer', 'asyncpg', 'uvloop', 'procrastinate', 'psycopg'):\n"
        "    print(n, m.version(n))\n"
    )
    out = subprocess.run([str(exe), "-c", code], capture_output=True, text=True, check=True)
    return dict(line.split(" ", 1) for line in out.stdout.splitlines())
