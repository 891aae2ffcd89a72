"""The fork server's own loop: fork a child on ``run``, reap it on ``reap``.

The worker's side of the exchange, and why the server exists, is
:class:`ocr.fork_server.ForkServer`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

from pg_pipeline_documents.ocr.child import child_main
from pg_pipeline_documents.ocr.limits import no_core_files
from pg_pipeline_documents.ocr.processes import kill_group
from pg_pipeline_documents.ocr.protocol import STDERR_NAME
from pg_pipeline_documents.ocr.tesseract import close_tesseracts, prepare

_PR_SET_PDEATHSIG = 1  # prctl(2)


def serve() -> int:
    """The fork server's loop: fork on ``run``, reap on ``reap``, until EOF on stdin."""
    no_core_files()
    # What every child needs, imported once. A failure is left for each child to report: its
    # own import fails the same way and says so in its result ("setup").
    with contextlib.suppress(Exception):
        import pypdfium2  # noqa: F401
    with contextlib.suppress(Exception):
        from PIL import Image  # noqa: F401
    with contextlib.suppress(Exception):
        import pg_pipeline_documents.layout  # noqa: F401  a text layer's layout (pydantic)
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    # The command pipe moves off fds 0 and 1, which become /dev/null for the children.
    commands_fd, replies_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    commands = os.fdopen(commands_fd, "rb")
    server_pid = os.getpid()
    children: set[int] = set()

    def reply(message: dict[str, Any]) -> None:
        os.write(replies_fd, json.dumps(message).encode() + b"\n")

    reply({"ready": server_pid})
    for line in commands:  # until EOF: the worker closed the pipe, or died
        try:
            message = json.loads(line)
            if "run" in message:
                request_path = str(message["run"])
                prepare(request_path)
                pid = os.fork()
                if pid == 0:
                    os.close(commands_fd)
                    os.close(replies_fd)
                    _forked_child(request_path, server_pid, libc)  # never returns
                children.add(pid)
                reply({"pid": pid})
            elif "reap" in message:
                pid = int(message["reap"])
                _, status, usage = os.wait4(pid, 0)
                children.discard(pid)
                returncode = os.waitstatus_to_exitcode(status)
                # Its CPU (tesseract's too, which it became): what the OCR stage reports as
                # its children's (ctx.usage(child_cpu_s=...)), since the worker cannot see it.
                cpu_s = usage.ru_utime + usage.ru_stime
                reply({"returncode": returncode, "maxrss_kb": usage.ru_maxrss, "cpu_s": cpu_s})
            else:
                reply({"error": f"unknown command {message!r}"})
        except Exception as exc:
            reply({"error": f"{type(exc).__name__}: {exc}"})
    for pid in children:
        kill_group(pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    close_tesseracts()
    return 0


def _forked_child(request_path: str, server_pid: int, libc: Any) -> None:
    """A child of the fork server: what ``python -P sandbox.py request.json`` would do."""
    code = 1
    try:
        os.setsid()  # its own session and group, as a spawned child has
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != server_pid:  # the server died before the prctl took
            os._exit(1)
        workdir = Path(request_path).parent
        stderr = os.open(workdir / STDERR_NAME, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(stderr, 2)
        os.close(stderr)
        os.chdir(workdir)  # the work directory names the child in /proc (cwd), as argv did
        code = child_main(request_path)
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stderr.flush()
        os._exit(code)
