"""The fork server's client in the worker, and the pool that keeps one per process.

Spawning ``python -P`` and importing pypdfium2 costs ~130 ms of CPU per child; a fork of a
process that did so costs a few. The server's own loop is :mod:`ocr.server_loop`.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pg_pipeline_documents.ocr.processes import Ended, kill_group, poll_exit
from pg_pipeline_documents.ocr.protocol import SANDBOX_SCRIPT, SERVE_FLAG

logger = logging.getLogger(__name__)

# How long a SIGKILLed child may take to exit (it can only be slow in uninterruptible I/O), and
# how long a closed fork server may take to kill and reap its children.
_KILLED_EXIT_WAIT_S = 10.0
_SERVER_EXIT_WAIT_S = 10.0
# How long the fork server may take to answer one request: a fork, a reap, or a language's
# first model load (~100 ms each when healthy). Past it the server is killed and replaced: a
# hung one would otherwise hold its pipe's lock, and every page after, for good.
_SERVER_ANSWER_S = 60.0
# How long a new server may take to say it is ready (Python's start and PDFium's import, ~0.3 s
# of CPU; many times that on a loaded machine), apart from the answers' bound.
_SERVER_START_S = 60.0
# After a server failed to start, pages are spawned for this long before another start is tried:
# a start that hangs would otherwise cost every page its full allowance.
_START_RETRY_S = 30.0


class ServerGone(Exception):
    """The fork server exited or broke its protocol."""


class ForkServer:
    """A single-threaded Python process that has imported PDFium once and forks the children.

    The server is started by exec (never forked from the multi-threaded worker, whose locks a
    fork would copy mid-use), in a session of its own, with the reduced environment
    (:func:`~ocr.protocol.child_environment`). Protocol, one JSON line each way:
    ``{"run": request_path}`` forks a child and answers ``{"pid": ...}`` (for the first page in a
    language it first loads libtesseract and that language's model, ~100 ms once, which every
    later child inherits); ``{"reap": pid}`` waits for that child and answers its
    ``returncode`` and peak RSS. The server reaps a child only when told to, so until then its
    pid (and process group id) cannot be reused: the caller watches it through a pidfd and kills
    its group safely, though it is not the child's parent.

    A child asks the kernel for SIGKILL when the server dies (``PR_SET_PDEATHSIG``); the server
    exits, killing and reaping its children, when its command pipe reaches EOF, which happens
    when this process closes it or dies.
    """

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.owner = os.getpid()
        self.inflight = 0  # guarded by the pool's lock
        self._lock = threading.Lock()  # one exchange on the pipe at a time
        self._proc = subprocess.Popen(
            [sys.executable, "-P", str(SANDBOX_SCRIPT), SERVE_FLAG],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,  # no terminal signal meant for the worker reaches it
            bufsize=0,  # replies are read from the descriptor, with a deadline (_read_line)
        )
        self._unread = b""  # what the server wrote past the last reply's newline
        self.broken = False
        try:
            ready = self._receive(_SERVER_START_S)
        except ServerGone:
            self.close()
            raise
        self.pid = int(ready["ready"])

    @property
    def alive(self) -> bool:
        return not self.broken and self._proc.poll() is None

    def run(self, request_path: Path, timeout_s: float) -> Ended:
        """Fork a child for ``request_path``, wait at most ``timeout_s``, kill, reap."""
        pid = int(self._call({"run": str(request_path)})["pid"])
        exited = False
        try:
            pidfd = os.pidfd_open(pid)  # the child is not reaped yet: only EMFILE and the like
        except OSError:
            kill_group(pid)
            self._call({"reap": pid})
            raise
        try:
            exited = poll_exit(pidfd, timeout_s)
        finally:
            kill_group(pid)  # the unreaped leader's pid still names its group
            poll_exit(pidfd, _KILLED_EXIT_WAIT_S)
            os.close(pidfd)
            try:
                reaped = self._call({"reap": pid})
            except ServerGone:
                # Its children got SIGKILL with it (PR_SET_PDEATHSIG), and init reaps them.
                reaped = {"returncode": -signal.SIGKILL, "maxrss_kb": None}
        peak = reaped["maxrss_kb"]
        return Ended(
            int(reaped["returncode"]),
            exited,
            None if peak is None else peak * 1024,
            reaped.get("cpu_s"),
        )

    def close(self) -> None:
        """End the server: EOF on its pipe; it kills and reaps what it still runs, and exits."""
        self.broken = True
        if self.owner != os.getpid():  # inherited through a fork: the pipe is the parent's
            return
        for stream in (self._proc.stdin, self._proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        try:
            self._proc.wait(timeout=_SERVER_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            kill_group(self._proc.pid)
            self._proc.wait()

    def _call(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self.broken or self._proc.stdin is None:
                raise ServerGone("the fork server is closed")
            try:
                data = memoryview(json.dumps(message).encode() + b"\n")
                while data:  # unbuffered: a write may take only part of it
                    data = data[self._proc.stdin.write(data) or 0 :]
            except (OSError, ValueError) as exc:
                self.broken = True
                raise ServerGone(f"the fork server is gone: {exc}") from exc
            return self._receive(_SERVER_ANSWER_S)

    def _receive(self, timeout_s: float) -> dict[str, Any]:
        try:
            line = self._read_line(timeout_s)
            reply = json.loads(line) if line else None
        except TimeoutError:
            self.broken = True
            kill_group(self._proc.pid)  # its children get SIGKILL with it (PR_SET_PDEATHSIG)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=_KILLED_EXIT_WAIT_S)
            raise ServerGone(f"the fork server did not answer within {timeout_s:g} s") from None
        except (OSError, ValueError) as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        if not isinstance(reply, dict) or "error" in reply:
            self.broken = True
            detail = "it exited" if reply is None else str(reply.get("error", reply))
            raise ServerGone(f"the fork server failed: {detail}")
        return reply

    def _read_line(self, timeout_s: float) -> bytes:
        """One reply line (b"" at EOF); TimeoutError if none is complete within ``timeout_s``."""
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._unread:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            if not select.select([fd], [], [], left)[0]:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return b""
            self._unread += chunk
        line, _, self._unread = self._unread.partition(b"\n")
        return line


class _ServerPool:
    """The fork server of this process: started on first use, replaced when the environment a
    child should get changes or the server dies; a retired one ends when its last child does."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: ForkServer | None = None
        self._retired: list[ForkServer] = []
        self._unavailable = not hasattr(os, "pidfd_open")  # for good: this system cannot
        self._start_after = 0.0  # monotonic time before which no new server is tried
        atexit.register(self.close)

    def run(self, request_path: Path, env: dict[str, str], timeout_s: float) -> Ended | None:
        """The child's end, or None when no fork server can run here (spawn it instead)."""
        for _ in range(2):  # a server that died between two pages is replaced once
            server = self._acquire(env)
            if server is None:
                return None
            try:
                return server.run(request_path, timeout_s)
            except ServerGone as exc:
                logger.warning("OCR fork server: %s; starting another", exc)
            finally:
                self._release(server)
        return None

    def pids(self) -> list[int]:
        """The running fork servers' pids (tests look for what they leave behind)."""
        with self._lock:
            servers = [s for s in (self._current, *self._retired) if s is not None]
            return [s.pid for s in servers if s.alive]

    def close(self) -> None:
        """Stop every fork server of this process (the next child starts a new one)."""
        with self._lock:
            servers = [s for s in (self._current, *self._retired) if s is not None]
            self._current, self._retired = None, []
        for server in servers:
            server.close()

    def _acquire(self, env: dict[str, str]) -> ForkServer | None:
        with self._lock:
            if self._unavailable:
                return None
            server = self._current
            if server is not None and server.owner != os.getpid():
                server, self._current, self._retired = None, None, []  # the parent's
            if server is None or server.env != env or not server.alive:
                if server is not None:
                    self._retire(server)
                if time.monotonic() < self._start_after:
                    return None
                try:
                    server = ForkServer(env)
                except (OSError, ServerGone) as exc:
                    # A start too slow for a loaded machine, or out of processes for a moment:
                    # spawn pages for a while, then try again, rather than give up for good.
                    logger.warning(
                        "no OCR fork server (%s): spawning each child for %g s",
                        exc,
                        _START_RETRY_S,
                    )
                    self._start_after = time.monotonic() + _START_RETRY_S
                    return None
                try:
                    os.close(os.pidfd_open(server.pid))  # pidfds work here (Linux >= 5.3)
                except OSError as exc:
                    server.close()
                    if exc.errno not in (errno.ENOSYS, errno.EPERM):  # out of descriptors
                        self._start_after = time.monotonic() + _START_RETRY_S
                        return None
                    logger.warning("no OCR fork server (%s): spawning each child instead", exc)
                    self._unavailable = True
                    return None
                self._current = server
            server.inflight += 1
            return server

    def _release(self, server: ForkServer) -> None:
        with self._lock:
            server.inflight -= 1
            done = server is not self._current and server.inflight == 0
            if done and server in self._retired:
                self._retired.remove(server)
        if done:
            server.close()

    def _retire(self, server: ForkServer) -> None:
        self._current = None
        if server.inflight:
            self._retired.append(server)
        else:
            server.close()


SERVERS = _ServerPool()


def fork_server_pids() -> list[int]:
    """Pids of this process's running OCR fork servers."""
    return SERVERS.pids()


def stop_fork_servers() -> None:
    """Stop this process's OCR fork servers; the next child starts a new one."""
    SERVERS.close()
