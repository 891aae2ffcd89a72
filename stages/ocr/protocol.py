"""What the worker and a sandboxed child share: the files of a work directory, the result's
shape, and the environment the child may see (see the package's docstring for the protocol)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REQUEST_NAME = "request.json"
RESULT_NAME = "result.json"
STDERR_NAME = "stderr.log"
_STDERR_TAIL_BYTES = 1000
#: The program the fork server and a spawned child run, with ``python -P``.
SANDBOX_SCRIPT = Path(__file__).resolve().with_name("sandbox.py")
SERVE_FLAG = "--serve"  #: ``python -P sandbox.py --serve`` runs the fork server
#: Variables the child and tesseract may see from the parent's environment. Python needs PATH,
#: HOME (a user site-packages) and PYTHONPATH / PYTHONHOME when pypdfium2 lives outside the venv;
#: tesseract needs its language data (TESSDATA_PREFIX), the locale, and LD_LIBRARY_PATH when it is
#: installed outside the system's library path. Everything else, secrets first, stays behind.
CHILD_ENV_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "TMPDIR",
        "TZ",
        "LANG",
        "LANGUAGE",
        "TESSDATA_PREFIX",
        "LD_LIBRARY_PATH",
        "PYTHONPATH",
        "PYTHONHOME",
    }
)
CHILD_ENV_PREFIXES = ("LC_",)  #: LC_ALL, LC_CTYPE, ...
#: What a "load" failure's reason means to a person, for the reasons that are not damage.
LOAD_REASONS = {
    "password": "PDF is encrypted (password protected)",
    "security": "PDF is encrypted with an unsupported security handler",
    "no_pages": "PDF has no pages",
}

#: What an op returns: its result, and the argv of a program the child should become, if any.
OpResult = tuple[dict[str, Any], list[str] | None]


class SetupError(Exception):
    """The environment is broken (no tesseract, no language data): reported as ``setup``."""


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of ``environ`` a child may see (:data:`CHILD_ENV_NAMES`), one OCR thread."""
    env = {
        name: value
        for name, value in environ.items()
        if name in CHILD_ENV_NAMES or name.startswith(CHILD_ENV_PREFIXES)
    }
    # One thread per page: pages already run in parallel, one job each, and tesseract's OpenMP
    # threads would only fight them for the same cores.
    env["OMP_THREAD_LIMIT"] = "1"
    return env


def failure(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "message": message, **extra}


def write_result(workdir: Path, result: dict[str, Any]) -> None:
    partial = workdir / (RESULT_NAME + ".part")
    partial.write_text(json.dumps(result), encoding="utf-8")
    os.replace(partial, workdir / RESULT_NAME)


def read_result(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_tail(path: Path) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - _STDERR_TAIL_BYTES))
            return f.read().decode("utf-8", errors="replace").strip()
    except OSError:
        return ""
