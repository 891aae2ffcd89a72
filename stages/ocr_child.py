"""The sandbox for PDFium and tesseract: a child process that the parent can always kill.

Parsing and rendering untrusted PDFs happens in C (PDFium), and so does OCR (tesseract); either
can hang, crash or allocate without bound. Everything that touches them runs in a separate Python
process started by :func:`run_child`, forked from a fork server that has imported pypdfium2 once
(:class:`ForkServer`: a few ms per child instead of ~130 ms to spawn ``python`` and import it):

* the child puts itself under ``RLIMIT_AS`` (address space) once its imports are done, and under
  ``RLIMIT_CPU`` as a backstop should the parent die (its soft limit kills with SIGXCPU, which
  tells our own limit apart from an outside SIGKILL such as the OOM killer's);
* the child gets only the environment variables it needs (:func:`child_environment`): it parses
  untrusted input, so the worker's secrets (``DATABASE_URL``, API keys, AWS credentials) stay out
  of its reach;
* for OCR the child renders the page, hands the pixels to libtesseract in its own process
  (:class:`_Tesseract`, through ctypes; the fork server has loaded the language's model once, so
  each child inherits an engine ready to read), closes PDFium's objects, records in its result
  that tesseract is reading, and reads. Tesseract runs under the child's pid, process group and
  both limits, and there is never a grandchild that a kill could orphan (an orphan killed with
  its group would linger as a zombie under init). Where the library cannot be found, the child
  writes the page to a PGM file and *execs* the tesseract command in its own place instead,
  which keeps the same guarantees and costs ~150 ms of CPU more per page;
* the child runs in a session (so a process group) of its own; the parent enforces the wall-clock
  timeout and sends SIGKILL to the whole group, which works however stuck the child is in C code,
  then has it reaped (by the fork server, which reaps only when told to: until then the child's
  pid cannot be reused, and the parent watches it through a pidfd);
* a page whose render holds almost no ink (:func:`ink_blocks`) is reported ``blank`` and never
  reaches tesseract;
* the parent owns the temporary work directory (request, result, and with the tesseract command
  the rendered image and its output) and removes it once the child is gone, so a killed child
  leaves no files behind.

At module level this file imports only the standard library: the parent imports it for
:func:`run_child`, the fork server runs it as a script (``python -P ocr_child.py --serve``) and
only then imports pypdfium2 (where there is no fork server, each child runs it as
``python -P ocr_child.py request.json``). It must not import anything from this package: the
child cannot.

Protocol: the parent writes ``request.json`` into the work directory; the child writes
``result.json`` (atomically) holding ``{"ok": true, ...}`` or ``{"ok": false, "kind": ...,
"message": ...}``. ``"method": "ocr"`` carries the text and mean word confidence tesseract read
in the child; ``"method": "blank"`` means it found no ink to read. A result with ``"stage":
"tesseract"`` and no method means the page was rendered and tesseract was reading it when the
process ended, or the process became the tesseract command: its exit status and output files
(``ocr.txt``, ``ocr.tsv``) are tesseract's. A child that leaves no result died (by a signal or
an exit status) and the parent draws its own conclusion. Kinds of failure:

``load``        the document cannot be opened; ``reason`` is ``password``, ``security``,
                ``no_pages`` or ``damaged``
``pdfium``      PDFium failed on the page (loading, text extraction, rendering)
``document``    some other property of the input makes the page unusable
``memory``      an allocation failed under the memory limit
``page_range``  the page index is outside the document (``page_count`` says how many pages)
``tesseract``   tesseract (in the child's process) could not recognise the page
``setup``       the environment is broken (pypdfium2 not importable, no tesseract, no language
                data)
``internal``    an unexpected exception: a bug, not the document's fault
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import logging
import math
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger("stages.ocr_child")

REQUEST_NAME = "request.json"
RESULT_NAME = "result.json"
STDERR_NAME = "stderr.log"
_STDERR_TAIL_BYTES = 1000
# PDFium's FPDF_GetLastError() codes (fpdfview.h) that the load step distinguishes.
_FPDF_ERR_SUCCESS = 0
_FPDF_ERR_PASSWORD = 4
_FPDF_ERR_SECURITY = 5
# How much CPU time past its soft RLIMIT_CPU (SIGXCPU) a child gets before the hard limit's
# SIGKILL: only something that ignores SIGXCPU ever reaches it (Python and tesseract do not).
_CPU_HARD_MARGIN_S = 5
SERVE_FLAG = "--serve"  #: ``python -P ocr_child.py --serve`` runs the fork server
# How long a SIGKILLed child may take to exit (it can only be slow in uninterruptible I/O), and
# how long a closed fork server may take to kill and reap its children.
_KILLED_EXIT_WAIT_S = 10.0
_SERVER_EXIT_WAIT_S = 10.0
# How long the fork server may take to answer one request: a fork, a reap, or its start-up and
# a language's first model load (~100 ms each when healthy). Past it the server is killed and
# replaced: a hung one would otherwise hold its pipe's lock, and every page after, for good.
_SERVER_ANSWER_S = 60.0
_PR_SET_PDEATHSIG = 1  # prctl(2)
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


# --------------------------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------------------------


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


def run_child(
    request: dict[str, Any],
    *,
    timeout_s: float,
    memory_limit_bytes: int,
    collect: tuple[str, ...] = (),
) -> ChildOutcome:
    """Run one request in a fresh, killable child process and wait at most ``timeout_s``.

    The child is forked from this process's fork server (:class:`ForkServer`, started on first
    use), or spawned afresh where a fork server cannot run. ``collect`` names files the child may
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
        ended = _SERVERS.run(request_path, env, timeout_s)
        if ended is None:  # no fork server here: spawn the child
            ended = _run_spawned(request_path, env, timeout_s)
        files = {}
        for name in collect:
            with contextlib.suppress(OSError):
                files[name] = (workdir / name).read_text(encoding="utf-8", errors="replace")
        return ChildOutcome(
            result=_read_result(workdir / RESULT_NAME),
            returncode=ended.returncode,
            timed_out=not ended.exited,
            stderr_tail=_read_tail(workdir / STDERR_NAME),
            files=files,
            peak_rss_bytes=ended.peak_rss_bytes,
        )


@dataclass(frozen=True)
class _Ended:
    returncode: int
    exited: bool  # by itself, before the deadline
    peak_rss_bytes: int | None


def _run_spawned(request_path: Path, env: dict[str, str], timeout_s: float) -> _Ended:
    """The child as a fresh ``python -P ocr_child.py request.json``: ~130 ms more than a fork."""
    command = [sys.executable, "-P", str(Path(__file__).resolve()), str(request_path)]
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
        exited = _wait_without_reaping(proc.pid, timeout_s)
    finally:
        # Kill the group before reaping its leader: until it is reaped, the leader's pid
        # keeps naming this group, so the signal cannot hit an unrelated process. This runs
        # on any exception too (KeyboardInterrupt included): no child outlives this call.
        _kill_group(proc.pid)
        proc.wait()
    return _Ended(proc.returncode, exited, None)


class ServerGone(Exception):
    """The fork server exited or broke its protocol."""


class ForkServer:
    """A single-threaded Python process that has imported PDFium once and forks the children.

    Spawning ``python -P`` and importing pypdfium2 costs ~130 ms of CPU per child; a fork of a
    process that did so costs a few. The server is started by exec (never forked from the
    multi-threaded worker, whose locks a fork would copy mid-use), in a session of its own, with
    the reduced environment (:func:`child_environment`). Protocol, one JSON line each way:
    ``{"run": request_path}`` forks a child and answers ``{"pid": ...}`` (for the first page in a
    language it first loads libtesseract and that language's model, ~100 ms once, which every
    later child inherits); ``{"reap": pid}`` waits for that child and answers its
    ``returncode`` and peak RSS. The server reaps a child only
    when told to, so until then its pid (and process group id) cannot be reused: the caller
    watches it through a pidfd and kills its group safely, though it is not the child's parent.

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
            [sys.executable, "-P", str(Path(__file__).resolve()), SERVE_FLAG],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,  # no terminal signal meant for the worker reaches it
            bufsize=0,  # replies are read from the descriptor, with a deadline (_read_line)
        )
        self._unread = b""  # what the server wrote past the last reply's newline
        self.broken = False
        try:
            ready = self._receive()
        except ServerGone:
            self.close()
            raise
        self.pid = int(ready["ready"])

    @property
    def alive(self) -> bool:
        return not self.broken and self._proc.poll() is None

    def run(self, request_path: Path, timeout_s: float) -> _Ended:
        """Fork a child for ``request_path``, wait at most ``timeout_s``, kill, reap."""
        pid = int(self._call({"run": str(request_path)})["pid"])
        exited = False
        try:
            pidfd = os.pidfd_open(pid)  # the child is not reaped yet: only EMFILE and the like
        except OSError:
            _kill_group(pid)
            self._call({"reap": pid})
            raise
        try:
            exited = _poll_exit(pidfd, timeout_s)
        finally:
            _kill_group(pid)  # the unreaped leader's pid still names its group
            _poll_exit(pidfd, _KILLED_EXIT_WAIT_S)
            os.close(pidfd)
            try:
                reaped = self._call({"reap": pid})
            except ServerGone:
                # Its children got SIGKILL with it (PR_SET_PDEATHSIG), and init reaps them.
                reaped = {"returncode": -signal.SIGKILL, "maxrss_kb": None}
        peak = reaped["maxrss_kb"]
        return _Ended(int(reaped["returncode"]), exited, None if peak is None else peak * 1024)

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
            _kill_group(self._proc.pid)
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
            return self._receive()

    def _receive(self) -> dict[str, Any]:
        try:
            line = self._read_line(_SERVER_ANSWER_S)
            reply = json.loads(line) if line else None
        except TimeoutError:
            self.broken = True
            _kill_group(self._proc.pid)  # its children get SIGKILL with it (PR_SET_PDEATHSIG)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=_KILLED_EXIT_WAIT_S)
            raise ServerGone(
                f"the fork server did not answer within {_SERVER_ANSWER_S:g} s"
            ) from None
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
        self._unavailable = not hasattr(os, "pidfd_open")
        atexit.register(self.close)

    def run(self, request_path: Path, env: dict[str, str], timeout_s: float) -> _Ended | None:
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
                try:
                    server = ForkServer(env)
                    os.close(os.pidfd_open(server.pid))  # pidfds work here (Linux >= 5.3)
                except (OSError, ServerGone) as exc:
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


_SERVERS = _ServerPool()


def fork_server_pids() -> list[int]:
    """Pids of this process's running OCR fork servers."""
    return _SERVERS.pids()


def stop_fork_servers() -> None:
    """Stop this process's OCR fork servers; the next child starts a new one."""
    _SERVERS.close()


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


def _wait_without_reaping(pid: int, timeout_s: float) -> bool:
    """Wait until the child has exited (a zombie, not reaped); False if the deadline came first."""
    deadline = time.monotonic() + timeout_s
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux >= 5.3: poll waitid() instead
        pidfd = None
    if pidfd is not None:
        try:
            return _poll_exit(pidfd, timeout_s)
        finally:
            os.close(pidfd)
    delay = 0.001
    while True:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)


def _poll_exit(pidfd: int, timeout_s: float) -> bool:
    """Wait until the process behind ``pidfd`` has exited; False if ``timeout_s`` came first."""
    deadline = time.monotonic() + timeout_s
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return bool(poller.poll(0))
        if poller.poll(math.ceil(remaining * 1000)):
            return True


def _kill_group(pgid: int) -> None:
    # ESRCH: the group is already gone (or holds only the zombie leader, on some systems).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _read_result(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _read_tail(path: Path) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - _STDERR_TAIL_BYTES))
            return f.read().decode("utf-8", errors="replace").strip()
    except OSError:
        return ""


def fit_dpi(width_pt: float, height_pt: float, dpi: int, max_pixels: int) -> int:
    """The highest dpi <= ``dpi`` at which the page renders to at most ``max_pixels`` (min 1)."""

    def pixels(d: int) -> int:
        scale = d / 72
        return math.ceil(width_pt * scale) * math.ceil(height_pt * scale)

    if pixels(dpi) <= max_pixels:
        return dpi
    fitted = min(dpi - 1, int(72 * math.sqrt(max_pixels / (width_pt * height_pt))))
    while fitted > 1 and pixels(fitted) > max_pixels:
        fitted -= 1
    return max(fitted, 1)


def signal_name(returncode: int) -> str:
    """'signal 6, SIGABRT' for a subprocess return code of -6."""
    number = -returncode
    try:
        return f"signal {number}, {signal.Signals(number).name}"
    except ValueError:
        return f"signal {number}"


# --------------------------------------------------------------------------------------------
# Child side
# --------------------------------------------------------------------------------------------


class _SetupError(Exception):
    pass


def _child_main(argv: list[str]) -> int:
    # No core files: a crashing renderer with gigabytes mapped would write one into the cwd.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    workdir: Path | None = None
    try:
        request: dict[str, Any] = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
        workdir = Path(request["workdir"])
        # Import before the memory limit applies: the limit is for the document's work, and a
        # failure here is the environment's fault, reported as such.
        import pypdfium2

        op = _OPS[request["op"]]
    except Exception as exc:
        if workdir is None:
            raise  # no way to report: the traceback goes to stderr, the exit status says 1
        _write_result(workdir, _failure("setup", f"{type(exc).__name__}: {exc}"))
        return 0
    _apply_limits(int(request["memory_limit_bytes"]), int(request["cpu_limit_s"]))
    exec_argv: list[str] | None = None
    try:
        result, exec_argv = op(pypdfium2, request)
    except MemoryError:
        result = _failure("memory", "out of memory")
    except OSError as exc:
        if exc.errno == errno.ENOMEM:
            result = _failure("memory", str(exc))
        else:
            result = _failure("internal", f"{type(exc).__name__}: {exc}")
    except pypdfium2.PdfiumError as exc:
        result = _failure("pdfium", str(exc))
    except _SetupError as exc:
        result = _failure("setup", str(exc))
    except Exception as exc:
        result = _failure("internal", f"{type(exc).__name__}: {exc}")
    _write_result(workdir, result)
    if exec_argv is not None:
        # Become tesseract (see the module docstring). Limits, pid and group carry over, and so
        # does this process's environment, already reduced by the parent.
        try:
            os.execve(exec_argv[0], exec_argv, child_environment(os.environ))
        except OSError as exc:
            kind = "memory" if exc.errno == errno.ENOMEM else "setup"
            _write_result(workdir, _failure(kind, f"cannot run tesseract: {exc}"))
    return 0


_OpResult = tuple[dict[str, Any], list[str] | None]


def _apply_limits(memory_limit_bytes: int, cpu_limit_s: int) -> None:
    _set_limit(resource.RLIMIT_AS, memory_limit_bytes, memory_limit_bytes)
    # Soft below hard: at the soft limit Linux sends SIGXCPU, which no one else sends, so the
    # parent can tell "our CPU limit" from an outside kill. With soft == hard it would send
    # SIGKILL at once, which looks exactly like the OOM killer.
    _set_limit(resource.RLIMIT_CPU, cpu_limit_s, cpu_limit_s + _CPU_HARD_MARGIN_S)


def _set_limit(which: int, soft: int, hard: int) -> None:
    _soft, current_hard = resource.getrlimit(which)
    if current_hard != resource.RLIM_INFINITY:  # an unprivileged process cannot raise it
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(which, (soft, hard))


def _failure(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"ok": False, "kind": kind, "message": message, **extra}


def _write_result(workdir: Path, result: dict[str, Any]) -> None:
    partial = workdir / (RESULT_NAME + ".part")
    partial.write_text(json.dumps(result), encoding="utf-8")
    os.replace(partial, workdir / RESULT_NAME)


def _open_document(pdfium: Any, path: str) -> tuple[Any, dict[str, Any] | None]:
    try:
        return pdfium.PdfDocument(path), None
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == _FPDF_ERR_PASSWORD:
            reason = "password"
        elif code == _FPDF_ERR_SECURITY:
            reason = "security"
        elif code == _FPDF_ERR_SUCCESS:
            # pypdfium2 treats a document that loads with a page count < 1 as a load failure;
            # PDFium's last error is then still "success".
            reason = "no_pages"
        else:
            reason = "damaged"
        return None, _failure("load", str(exc), reason=reason)


def _op_info(pdfium: Any, request: dict[str, Any]) -> _OpResult:
    doc, failure = _open_document(pdfium, request["pdf"])
    if failure is not None:
        return failure, None
    try:
        return {"ok": True, "page_count": len(doc)}, None
    finally:
        doc.close()


def _op_page(pdfium: Any, request: dict[str, Any]) -> _OpResult:
    workdir = Path(request["workdir"])
    page_index = int(request["page_index"])
    doc, failure = _open_document(pdfium, request["pdf"])
    if failure is not None:
        return failure, None
    page_count = len(doc)
    if not 0 <= page_index < page_count:
        message = f"the document has {page_count} pages"
        return _failure("page_range", message, page_count=page_count), None
    page = doc[page_index]
    textpage = page.get_textpage()
    text = _normalize(textpage.get_text_range())
    with contextlib.suppress(Exception):  # reading order is an improvement, never a failure
        ordered = columns_in_reading_order(_text_segments(textpage), page.get_width())
        if ordered is not None:
            text = _normalize(ordered)
    textpage.close()
    if sum(not c.isspace() for c in text) >= int(request["min_text_chars"]):
        return {"ok": True, "method": "text_layer", "text": text}, None
    width_pt, height_pt = page.get_size()
    if not (width_pt > 0 and height_pt > 0):
        return _failure("document", f"the page has no area ({width_pt} x {height_pt} pt)"), None
    library = request.get("tesseract_library")
    tesseract = request.get("tesseract")
    if not library and not tesseract:
        raise _SetupError("tesseract binary not found on PATH")
    requested_dpi = int(request["dpi"])
    dpi = fit_dpi(width_pt, height_pt, requested_dpi, int(request["max_pixels"]))
    blank_below = int(request.get("blank_below", 0))
    grey = _render_grey(page, dpi)
    try:
        ink = ink_blocks(grey, dpi) if blank_below > 0 else None
        if ink is not None and ink < blank_below:  # nothing to read: no tesseract, no image file
            return {"ok": True, "method": "blank", "ink": ink, "dpi": dpi}, None
        rendered = {"ok": True, "stage": "tesseract", "dpi": dpi, "requested_dpi": requested_dpi}
        if library:
            engine = _tesseract(str(library)).engine(str(request["lang"]))
            engine.set_image(grey)
        else:
            image = workdir / "page.pgm"
            _write_pgm(grey, image)
    finally:
        grey.close()
    if not library:
        # tesseract IMAGE OUTBASE writes OUTBASE.txt and OUTBASE.tsv in one recognition pass.
        # No --dpi: tesseract's own estimate from the text size read the samples with a lower
        # error rate and ~10% faster than being told the render resolution.
        argv = [str(tesseract), str(image), str(workdir / "ocr")]
        argv += ["-l", str(request["lang"]), "txt", "tsv"]
        return rendered, argv
    # The engine holds its own copy of the pixels: PDFium's share of memory goes first.
    page.close()
    doc.close()
    # Should tesseract crash or be killed, the parent knows it happened while it read the page.
    _write_result(workdir, rendered)
    read = engine.recognize()
    if read is None:
        return _failure("tesseract", "tesseract could not recognise the page"), None
    text, confidence = read
    return {**rendered, "method": "ocr", "text": text, "confidence": confidence}, None


#: Most text rectangles read from one page for the reading-order pass (a page beyond it keeps
#: PDFium's order): bounds the work on pathological pages.
MAX_SEGMENTS = 20_000


@dataclass(frozen=True)
class Segment:
    """A run of text on one line of a page, with its box in points (origin bottom left)."""

    text: str
    left: float
    bottom: float
    right: float
    top: float


def _text_segments(textpage: Any) -> list[Segment]:
    count = textpage.count_rects()
    if count > MAX_SEGMENTS:
        return []
    segments = []
    for index in range(count):
        left, bottom, right, top = textpage.get_rect(index)
        text = " ".join(str(textpage.get_text_bounded(left, bottom, right, top)).split())
        if text:
            segments.append(Segment(text, left, bottom, right, top))
    return segments


def _visual_lines(segments: list[Segment]) -> list[list[Segment]]:
    """Segments grouped into lines (vertical centres within half a line height), top down."""
    lines: list[list[Segment]] = []
    for seg in sorted(segments, key=lambda s: (-(s.top + s.bottom) / 2, s.left)):
        centre = (seg.top + seg.bottom) / 2
        if lines:
            last = lines[-1][0]
            height = max(last.top - last.bottom, seg.top - seg.bottom, 1.0)
            if abs((last.top + last.bottom) / 2 - centre) < height / 2:
                lines[-1].append(seg)
                continue
        lines.append([seg])
    return [sorted(line, key=lambda s: s.left) for line in lines]


def columns_in_reading_order(segments: list[Segment], page_width: float) -> str | None:
    """The page's text with two-column blocks read column by column, or None if it has none.

    A block is a run of at least 3 lines that each split into a left and a right part at the
    same gutter near the middle of the page, no text crossing it. Generators often draw such
    blocks row by row, and PDFium then interleaves the columns line by line; lines outside
    blocks (tables included) keep their left-to-right order.
    """
    lines = _visual_lines(segments)

    def gutter(line: list[Segment]) -> float | None:
        left = [s for s in line if s.right < page_width * 0.55]
        right = [s for s in line if s.left > page_width * 0.45]
        if not left or not right or len(left) + len(right) != len(line):
            return None
        gap_left, gap_right = max(s.right for s in left), min(s.left for s in right)
        # One run a side: a table row has a cell more, and keeps its left-to-right order.
        if gap_right - gap_left < 8 or len(right) != 1 or len(left) != 1:
            return None
        return (gap_left + gap_right) / 2

    def one_side(line: list[Segment]) -> bool:
        return all(s.right < page_width * 0.55 for s in line) or all(
            s.left > page_width * 0.45 for s in line
        )

    def centre(line: list[Segment]) -> float:
        return (line[0].top + line[0].bottom) / 2

    out: list[str] = []
    found = False
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and gutter(lines[j]) is not None:
            j += 1
        if j - i >= 3:
            # The longer column goes on alone for a few lines at the same pitch.
            pitch = (centre(lines[i]) - centre(lines[j - 1])) / (j - 1 - i)
            while (
                j < len(lines)
                and one_side(lines[j])
                and centre(lines[j - 1]) - centre(lines[j]) <= pitch * 1.2
            ):
                j += 1
            found = True
            block = lines[i:j]
            middle = page_width / 2
            out += [" ".join(s.text for s in ln if s.right < middle + 1) for ln in block]
            out += [" ".join(s.text for s in ln if s.left > middle - 1) for ln in block]
            out = [ln for ln in out if ln]
            i = j
            continue
        out.append(" ".join(s.text for s in lines[i]))
        i += 1
    return "\n".join(out) if found else None


def _normalize(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip()


#: An ink block is a square of about 1/75 inch (4 x 4 pixels at 300 dpi) whose mean grey is
#: darker than this: a stroke of text through it makes it one, while a scanner's speck of a pixel
#: or two (or JPEG noise, or a grey background) does not.
INK_BLOCK_GREY = 160
INK_BLOCKS_PER_INCH = 75


def ink_blocks(bitmap: Any, dpi: int) -> int | None:
    """How many ink blocks (:data:`INK_BLOCK_GREY`) an 8-bit grey bitmap holds; None without
    Pillow, which does the counting in C (a Python loop over 8 million pixels would not be
    cheap)."""
    try:
        from PIL import Image
    except ImportError:
        return None
    image = Image.frombuffer(
        "L", (bitmap.width, bitmap.height), bitmap.buffer, "raw", "L", bitmap.stride, 1
    )
    factor = max(1, round(dpi / INK_BLOCKS_PER_INCH))
    return sum(image.reduce(factor).histogram()[:INK_BLOCK_GREY])


@dataclass
class _Grey:
    """A rendered page in 8-bit grey: ``stride`` bytes a row, ``height`` rows."""

    buffer: Any  # a writable buffer: PDFium's bitmap, or a bytearray
    width: int
    height: int
    stride: int
    close: Callable[[], None]


def _render_grey(page: Any, dpi: int) -> _Grey:
    """Render the page in 8-bit grey; the caller closes the result."""
    bitmap = page.render(scale=dpi / 72, grayscale=True)
    if bitmap.n_channels == 1:
        return _Grey(bitmap.buffer, bitmap.width, bitmap.height, bitmap.stride, bitmap.close)
    try:  # not expected with grayscale=True; convert to be safe
        image = bitmap.to_pil().convert("L")
    finally:
        bitmap.close()
    return _Grey(bytearray(image.tobytes()), image.width, image.height, image.width, lambda: None)


def _write_pgm(grey: _Grey, path: Path) -> None:
    """Write the page as binary PGM (uncompressed netpbm), for the tesseract command."""
    width, height, stride = grey.width, grey.height, grey.stride
    buffer = memoryview(grey.buffer).cast("B")
    with path.open("wb") as out:
        out.write(b"P5\n%d %d\n255\n" % (width, height))
        if stride == width:
            out.write(buffer[: width * height])
        else:
            for row in range(height):
                out.write(buffer[row * stride : row * stride + width])


# --------------------------------------------------------------------------------------------
# Tesseract in the child's own process
# --------------------------------------------------------------------------------------------

_PSM_AUTO = 3  # TessPageSegMode PSM_AUTO: the tesseract command's default
_RIL_WORD = 3  # TessPageIteratorLevel RIL_WORD


class _Tesseract:
    """libtesseract's C API through ctypes, with one initialised engine per language.

    The fork server initialises the engine for a language once (reading its model costs ~100 ms
    of CPU, as every start of the tesseract command does) and each child inherits it ready:
    a fork gives the child a copy of its own, so no page's state reaches another. The page's
    pixels go to tesseract from the render's buffer, with no image file in between.
    """

    def __init__(self, library: str) -> None:
        import ctypes

        self._ctypes = ctypes
        try:
            lib = ctypes.CDLL(library)
        except OSError as exc:
            raise _SetupError(f"cannot load {library}: {exc}") from exc
        handle, text, c_int = ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int
        for name, restype, argtypes in (
            ("TessBaseAPICreate", handle, []),
            ("TessBaseAPIInit3", c_int, [handle, ctypes.c_char_p, ctypes.c_char_p]),
            ("TessBaseAPISetPageSegMode", None, [handle, c_int]),
            ("TessBaseAPISetImage", None, [handle, ctypes.c_void_p, c_int, c_int, c_int, c_int]),
            ("TessBaseAPIRecognize", c_int, [handle, ctypes.c_void_p]),
            ("TessBaseAPIGetUTF8Text", text, [handle]),
            ("TessBaseAPIGetIterator", handle, [handle]),
            ("TessResultIteratorGetUTF8Text", text, [handle, c_int]),
            ("TessResultIteratorConfidence", ctypes.c_float, [handle, c_int]),
            ("TessResultIteratorNext", c_int, [handle, c_int]),
            ("TessResultIteratorDelete", None, [handle]),
            ("TessDeleteText", None, [text]),
            ("TessBaseAPIEnd", None, [handle]),
            ("TessBaseAPIDelete", None, [handle]),
        ):
            function = getattr(lib, name)
            function.restype, function.argtypes = restype, argtypes
        self._lib = lib
        self._engines: dict[str, int] = {}
        self._made_by: dict[str, int] = {}  # language -> pid of the process that made it

    def engine(self, lang: str) -> _Engine:
        """The engine for ``lang``, initialised on first use (:class:`_SetupError` if not)."""
        api = self._engines.get(lang)
        if api is None:
            api = self._lib.TessBaseAPICreate()
            if not api or self._lib.TessBaseAPIInit3(api, None, lang.encode()) != 0:
                if api:
                    self._lib.TessBaseAPIDelete(api)
                raise _SetupError(
                    f"could not initialize tesseract for language {lang!r} (is its data installed?)"
                )
            self._lib.TessBaseAPISetPageSegMode(api, _PSM_AUTO)
            self._engines[lang], self._made_by[lang] = api, os.getpid()
        return _Engine(self, api)

    def close(self) -> None:
        """Free the engines this process made (a forked child leaves its inherited copies)."""
        for lang, api in list(self._engines.items()):
            if self._made_by[lang] == os.getpid():
                self._lib.TessBaseAPIEnd(api)
                self._lib.TessBaseAPIDelete(api)
            del self._engines[lang]

    def _take_text(self, pointer: int | None) -> str:
        if not pointer:
            return ""
        try:
            return self._ctypes.string_at(pointer).decode("utf-8", errors="replace")
        finally:
            self._lib.TessDeleteText(pointer)


@dataclass(frozen=True)
class _Engine:
    tesseract: _Tesseract
    api: int

    def set_image(self, grey: _Grey) -> None:
        """Hand tesseract the page's pixels (it copies them: ``grey`` may be closed after)."""
        ctypes = self.tesseract._ctypes
        address = ctypes.addressof((ctypes.c_char * 1).from_buffer(grey.buffer))
        self.tesseract._lib.TessBaseAPISetImage(
            self.api, address, grey.width, grey.height, 1, grey.stride
        )

    def recognize(self) -> tuple[str, float | None] | None:
        """The page's text as the tesseract command's ``txt`` output has it, and the mean word
        confidence as its ``tsv`` output would give it; None when recognition fails."""
        t, lib = self.tesseract, self.tesseract._lib
        if lib.TessBaseAPIRecognize(self.api, None) != 0:
            return None
        text = t._take_text(lib.TessBaseAPIGetUTF8Text(self.api))
        confidences = []
        words = lib.TessBaseAPIGetIterator(self.api)
        if words:
            try:
                while True:
                    word = t._take_text(lib.TessResultIteratorGetUTF8Text(words, _RIL_WORD))
                    if word.strip():
                        confidence = lib.TessResultIteratorConfidence(words, _RIL_WORD)
                        if confidence >= 0:
                            confidences.append(float(confidence))
                    if not lib.TessResultIteratorNext(words, _RIL_WORD):
                        break
            finally:
                lib.TessResultIteratorDelete(words)
        return text, (sum(confidences) / len(confidences) if confidences else None)


_TESSERACTS: dict[str, _Tesseract] = {}


def _tesseract(library: str) -> _Tesseract:
    """The loaded library (once per process; a forked child inherits its parent's)."""
    loaded = _TESSERACTS.get(library)
    if loaded is None:
        loaded = _TESSERACTS[library] = _Tesseract(library)
    return loaded


def _close_tesseracts() -> None:
    for loaded in _TESSERACTS.values():
        loaded.close()


def _prepare(request_path: str) -> None:
    """In the fork server, before a page's fork: have its language's engine ready to inherit.
    Any failure is left for the child, which tries again and reports it."""
    with contextlib.suppress(Exception):
        request = json.loads(Path(request_path).read_text(encoding="utf-8"))
        library = request.get("tesseract_library")
        if request.get("op") == "page" and library:
            _tesseract(str(library)).engine(str(request["lang"]))


_OPS: dict[str, Callable[[Any, dict[str, Any]], _OpResult]] = {
    "info": _op_info,
    "page": _op_page,
}


def _serve() -> int:
    """The fork server's loop (see :class:`ForkServer`): fork on ``run``, reap on ``reap``."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # What every child needs, imported once. A failure is left for each child to report: its
    # own import fails the same way and says so in its result ("setup").
    with contextlib.suppress(Exception):
        import pypdfium2  # noqa: F401
    with contextlib.suppress(Exception):
        from PIL import Image  # noqa: F401
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
                _prepare(request_path)
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
                reply({"returncode": returncode, "maxrss_kb": usage.ru_maxrss})
            else:
                reply({"error": f"unknown command {message!r}"})
        except Exception as exc:
            reply({"error": f"{type(exc).__name__}: {exc}"})
    for pid in children:
        _kill_group(pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    _close_tesseracts()
    return 0


def _forked_child(request_path: str, server_pid: int, libc: Any) -> None:
    """A child of the fork server: what ``python -P ocr_child.py request.json`` would do."""
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
        code = _child_main([__file__, request_path])
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    if sys.argv[1:] == [SERVE_FLAG]:
        sys.exit(_serve())
    status = _child_main(sys.argv)
    _close_tesseracts()
    sys.exit(status)
