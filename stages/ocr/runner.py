"""Run one request in a killable child: the worker's side of the sandbox (see :mod:`ocr`).

The child is forked from the process's fork server (:mod:`ocr.fork_server`), or spawned
as ``python -P sandbox.py request.json`` where a fork server cannot run.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pg_pipeline_documents.ocr.fork_server import SERVERS
from pg_pipeline_documents.ocr.processes import Ended, kill_group, wait_without_reaping
from pg_pipeline_documents.ocr.protocol import (
    REQUEST_NAME,
    RESULT_NAME,
    SANDBOX_SCRIPT,
    STDERR_NAME,
    child_environment,
    read_result,
    read_tail,
)


@dataclass(frozen=True)
class ChildOutcome:
    """What became of one child run.

    ``result`` is what the child reported, or None when it reported nothing (it was killed, or
    died first). ``returncode`` follows :mod:`subprocess`: negative means killed by that signal.
    ``timed_out`` is true when the deadline came first and the parent killed the child.
    ``files`` holds the text of the requested output files that exist.
    """

    result: dict[str, Any] | None
    returncode: int
    timed_out: bool
    stderr_tail: str
    files: dict[str, str]
    #: The child's peak resident set (PDFium's render and tesseract's, whichever was higher),
    #: when it ran from the fork server, which reaps it; None when that is unknown.
    peak_rss_bytes: int | None = None
    #: Its CPU seconds (tesseract's included), when it ran from the fork server.
    cpu_s: float | None = None


def run_child(
    request: dict[str, Any],
    *,
    timeout_s: float,
    memory_limit_bytes: int,
    collect: tuple[str, ...] = (),
) -> ChildOutcome:
    """Run one request in a fresh, killable child process and wait at most ``timeout_s``.

    The child is forked from this process's fork server (started on first use), or spawned
    afresh where a fork server cannot run. ``collect`` names files the child may
    leave in its work directory; their text is read back before the directory is removed.
    """
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, not {timeout_s!r}")
    if memory_limit_bytes <= 0:
        raise ValueError(f"memory_limit_bytes must be positive, not {memory_limit_bytes!r}")
    with tempfile.TemporaryDirectory(prefix="pg-pipeline-pdf-") as tmp:
        workdir = Path(tmp)
        request_path = workdir / REQUEST_NAME
        full_request = {
            **request,
            "workdir": str(workdir),
            "memory_limit_bytes": memory_limit_bytes,
            # Only a backstop for a child whose parent died: the parent's wall clock comes first.
            "cpu_limit_s": math.ceil(timeout_s) + 10,
        }
        request_path.write_text(json.dumps(full_request), encoding="utf-8")
        env = child_environment(os.environ)
        ended = SERVERS.run(request_path, env, timeout_s)
        if ended is None:  # no fork server here: spawn the child
            ended = _run_spawned(request_path, env, timeout_s)
        files = {}
        for name in collect:
            with contextlib.suppress(OSError):
                files[name] = (workdir / name).read_text(encoding="utf-8", errors="replace")
        return ChildOutcome(
            result=read_result(workdir / RESULT_NAME),
            returncode=ended.returncode,
            timed_out=not ended.exited,
            stderr_tail=read_tail(workdir / STDERR_NAME),
            files=files,
            peak_rss_bytes=ended.peak_rss_bytes,
            cpu_s=ended.cpu_s,
        )


def _run_spawned(request_path: Path, env: dict[str, str], timeout_s: float) -> Ended:
    """The child as a fresh ``python -P sandbox.py request.json``: ~130 ms more than a fork."""
    command = [sys.executable, "-P", str(SANDBOX_SCRIPT), str(request_path)]
    with (request_path.parent / STDERR_NAME).open("wb") as stderr:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
            start_new_session=True,  # setsid() in the child: its pid is the group id
        )
    exited = False
    try:
        exited = wait_without_reaping(proc.pid, timeout_s)
    finally:
        # Kill the group before reaping its leader: until it is reaped, the leader's pid
        # keeps naming this group, so the signal cannot hit an unrelated process. This runs
        # on any exception too (KeyboardInterrupt included): no child outlives this call.
        kill_group(proc.pid)
        proc.wait()
    return Ended(proc.returncode, exited, None)
