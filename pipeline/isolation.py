"""Run one call in a child process that the worker can always kill.

The worker uses this for two things: to run a job it suspects of crashing processes, so that a
crash (a segfault, the OOM killer, ``os._exit``) is attributable to that job alone, and to really
stop a stage that ignores its timeout. :meth:`Isolator.run` pickles a module-level function and
its arguments, runs them in a fresh child and returns a :class:`ChildResult`.

Why a fork server: the worker is a thread pool, and ``fork()`` from a multi-threaded process
copies locks that other threads hold at that instant (logging, the import lock, libpq's), so the
child can deadlock on its first use of one. multiprocessing's fork server is a single-threaded
process started once, by exec; it imports the ``preload`` modules (the app's stages) and then
forks every child from itself, so a child starts in milliseconds with the stages imported.

multiprocessing keeps one fork server (and one preload list) per process, so every Isolator of
the process shares it; the shared preload list is the union of what the open Isolators asked
for, the server restarts to take in new modules only when no child is running, and the last
:meth:`Isolator.close` stops it. This module owns the process's forkserver context: do not use
``multiprocessing.get_context("forkserver")`` for anything else in a worker that uses it.

The server always preloads this module first. Imported there, the module prepares the server
(:func:`_arm_fork_server`): it imports the other preload modules itself and records their
failures (multiprocessing ignores an ImportError and dies of any other exception, which would
break every Isolator of the process), makes the server a child subreaper so that the
grandchildren of a killed child are reaped instead of lingering as zombies, keeps children from
re-running the worker's ``__main__`` script (multiprocessing does that for targets defined in
``__main__``; ours never are), and kills its children's process groups when it exits.

Lifetimes, on Linux:

* a child is its own session and process group; on timeout, on ``stop`` and after it delivers
  its result, the parent sends SIGKILL to the whole group and the fork server reaps the child;
* a child asks for SIGKILL when its parent, the fork server, dies (``PR_SET_PDEATHSIG``);
* the fork server exits when the worker dies: it waits for EOF on a pipe that only the worker
  holds (every child closes its inherited copy at once), and on exit it kills and reaps its
  children's groups.

Elsewhere on POSIX the same code runs without the two ``prctl`` guarantees (a child may outlive a
killed worker, and killed grandchildren are left to init); a warning says so. Windows has no fork
server: :class:`Isolator` raises :class:`IsolationError`.

What a caller should know:

* the child gets the worker's environment, working directory, ``sys.path`` and ``sys.argv`` as
  they are at run(); its stdin is /dev/null and its stdout/stderr are the file descriptors the
  fork server inherited when it started (the worker's, unless those were redirected since); its
  ``logging`` is unconfigured (warnings and worse reach stderr through Python's last resort);
* the child ends with ``os._exit`` as soon as its result is sent: the call's atexit handlers
  and non-daemon threads do not run on, and processes it left in its group are killed;
* a preload module that fails to import is reported by every run() of the Isolators that ask
  for it until the fork server restarts (all Isolators closed, or a new module arrives while no
  child runs); one that hangs on import hangs the first run(), as the server never answers; one
  that starts threads at import is logged, since forking from the server is then unsafe again;
* multiprocessing's resource tracker, a process the fork server needs, stays after close(): it
  belongs to the whole process, sits idle, and exits with it;
* some of this rests on multiprocessing internals that Python 3.11 to 3.14 share (the fork
  server's ``_stop`` and alive pipe, ``forkserver.main``'s locals, ``spawn._fixup_main_*``);
  where one is missing, the feature it serves degrades and a warning is logged.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import importlib
import importlib.abc
import importlib.util
import logging
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from multiprocessing import connection, forkserver, process, spawn
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext, ForkServerProcess
from types import FrameType, ModuleType, TracebackType
from typing import Any, Protocol

__all__ = ["ChildResult", "IsolationError", "Isolator"]

log = logging.getLogger(__name__)

#: How often a waiting parent looks at its `stop` event: a stop takes effect within this.
POLL_INTERVAL_S = 0.025
#: How long a child that delivered its result may take to exit before it is killed; it calls
#: os._exit right after sending, so this only matters if something is badly wrong.
_EXIT_GRACE_S = 2.0
#: A SIGKILLed process is gone within milliseconds unless it sleeps uninterruptibly in the kernel.
_REAP_TIMEOUT_S = 10.0
#: How long the exiting fork server keeps killing and reaping its children before it gives up.
_SERVER_EXIT_REAP_S = 2.0
_TRACEBACK_FRAMES = 3
_MESSAGE_MAX_CHARS = 1000

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36

# Child-to-parent messages are (kind, body) pairs of byte strings, sent as two messages so that a
# huge pickled value is never copied just to put a tag in front of it.
_HELLO = b"h"  # the child is up; anything after this is the call's doing
_VALUE = b"v"  # body: the pickled return value
_RAISED = b"r"  # body: the exception, as text
_SETUP = b"s"  # body: why the child could not prepare (a preload module fails to import)

# Set in the fork server by _arm_fork_server(); its children inherit them through fork().
_SERVER_PID: int | None = None
_PRELOAD_ERRORS: dict[str, str] = {}
_SERVER_THREADS = 1  # once the preload modules are imported; fork() is only safe with one

_OWN_FILES = frozenset({__file__, importlib.__file__})

_warned: set[str] = set()
_warned_lock = threading.Lock()


class StopSignal(Protocol):
    """What run() needs of its `stop`: a threading.Event will do, and so will a job's
    lost_lease (a pg_pipeline.lazy_event.LazyEvent)."""

    def is_set(self) -> bool: ...


class IsolationError(RuntimeError):
    """The isolation machinery failed, so the call did not run (or not to its end).

    Raised by :meth:`Isolator.run` when the call cannot be pickled, a preload module fails to
    import, the fork server cannot start a child or dies under it, or the Isolator is closed.
    None of these is the job's fault, which is why they are not a :class:`ChildResult`.
    """


@dataclass(frozen=True)
class ChildResult:
    """How one isolated call ended. Exactly one of returned, error, died, timed_out, stopped."""

    #: What the target returned (unpickled), when it returned normally.
    value: Any = None
    #: The target raised: "TypeName: message" and the last frames of its traceback; or its value
    #: could not be pickled back ("cannot pickle the returned value: ...").
    error: str | None = None
    #: The child's exit status (negative: killed by that signal) when it ended without delivering
    #: a result, or was killed by us; None when it delivered a value or an error (it then exits
    #: 0 at once, and the result stands however the exit goes).
    returncode: int | None = None
    #: The deadline passed and the child was killed.
    timed_out: bool = False
    #: The `stop` event was set (or the Isolator closed) and the child was killed; also set,
    #: with no returncode, when `stop` was set before run() started a child.
    stopped: bool = False

    @property
    def returned(self) -> bool:
        """`value` is what the target returned."""
        return (
            self.error is None
            and self.returncode is None
            and not self.timed_out
            and not self.stopped
        )

    @property
    def died(self) -> bool:
        """The child ended without a result, and not because we killed it."""
        return (
            self.error is None
            and self.returncode is not None
            and not self.timed_out
            and not self.stopped
        )

    def describe_death(self) -> str:
        """How the child ended, e.g. "killed by SIGKILL" or "exited with status 3"."""
        code = self.returncode
        if code is None:
            if self.stopped:
                return "stopped before a child was started"
            return "raised an exception" if self.error is not None else "returned a result"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            text = f"killed by {name}"
        elif code == 0:
            text = "exited with status 0 without returning a result"
        else:
            text = f"exited with status {code}"
        if self.timed_out:
            return f"{text} after its timeout"
        if self.stopped:
            return f"{text} on request"
        return text


class Isolator:
    """Runs calls in killable child processes forked from a shared, preloaded fork server.

    `preload` names modules the fork server imports once, before it forks any child, so each
    child starts with them imported. Targets must be module-level functions of importable
    modules, not of ``__main__``. run() is thread-safe: each call gets its own child.
    """

    def __init__(self, preload: Sequence[str] = ()) -> None:
        if isinstance(preload, str):
            raise TypeError("preload is a sequence of module names, not a single string")
        names = tuple(dict.fromkeys(preload))
        for name in names:
            if not isinstance(name, str) or not all(p.isidentifier() for p in name.split(".")):
                raise ValueError(f"preload entries are module names, not {name!r}")
            if name == "__main__":
                # The worker's __main__ is its command line entry point: importing it in the fork
                # server could start a second worker, and targets never live there anyway.
                raise ValueError("never preload __main__: put the stages in importable modules")
        if "forkserver" not in multiprocessing.get_all_start_methods():
            raise IsolationError(
                f"isolation needs the forkserver start method (not on {sys.platform})"
            )
        if not sys.platform.startswith("linux"):
            _warn_once(
                "platform",
                "pg_pipeline.isolation on %s: children are not killed when the worker dies "
                "(no PR_SET_PDEATHSIG) and killed grandchildren are left to init",
                sys.platform,
            )
        self._preload = names
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._active = 0
        self._closed = False
        self._closing = threading.Event()
        _SHARED.enter(names)

    @property
    def preload(self) -> tuple[str, ...]:
        return self._preload

    def run(
        self,
        target: Callable[..., Any],
        args: tuple[Any, ...] = (),
        *,
        timeout_s: float | None = None,
        stop: StopSignal | None = None,
        memory_limit_bytes: int | None = None,
    ) -> ChildResult:
        """Run ``target(*args)`` in a new child and wait for it to end.

        `timeout_s` counts from the moment the child exists (the first run() of a process also
        waits for the fork server to start and import its preload modules); from then on `stop`
        is polled every POLL_INTERVAL_S. `memory_limit_bytes` caps the child's address space
        (RLIMIT_AS) while the target runs; it must leave room for what the child inherits from
        the fork server (about 70 MB of address space with this package imported, more with the
        app's stages). Raises IsolationError when the machinery, not the call, fails.
        """
        if timeout_s is not None and timeout_s < 0:
            raise ValueError(f"timeout_s must not be negative, not {timeout_s}")
        if memory_limit_bytes is not None and memory_limit_bytes <= 0:
            raise ValueError(f"memory_limit_bytes must be positive, not {memory_limit_bytes}")
        if getattr(target, "__module__", None) == "__main__":
            # It would pickle, by a name that children (which never run __main__) cannot find.
            raise IsolationError(f"{target!r} is defined in __main__: move it to a module")
        if stop is not None and stop.is_set():
            return ChildResult(stopped=True)
        try:
            call = pickle.dumps((target, args), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise IsolationError(
                f"cannot pickle the call to {target!r}: {_describe_exception(exc)} "
                "(the target must be a module-level function, its arguments picklable)"
            ) from exc
        with self._running():
            return self._run(call, timeout_s, stop, memory_limit_bytes)

    def close(self) -> None:
        """Kill this Isolator's running children (their run() returns stopped), wait for their
        run() calls to return, and stop the fork server if no other Isolator is open."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._closing.set()
            while self._active:
                self._idle.wait()
        _SHARED.leave(self._preload)

    def __enter__(self) -> Isolator:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextlib.contextmanager
    def _running(self) -> Iterator[None]:
        with self._lock:
            if self._closed:
                raise IsolationError("this Isolator is closed")
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                self._idle.notify_all()

    def _run(
        self,
        call: bytes,
        timeout_s: float | None,
        stop: StopSignal | None,
        memory_limit_bytes: int | None,
    ) -> ChildResult:
        asked = time.monotonic()
        ctx = _context()
        reader, writer = ctx.Pipe(duplex=False)
        # The child gets the parent's environment as it is now, not as it was when the fork
        # server started.
        environ = dict(os.environ)
        proc = ctx.Process(
            target=_child_main,
            args=(writer, call, self._preload, memory_limit_bytes, environ),
            name="pipeline-isolation",
        )
        try:
            _SHARED.start(proc)
        except BaseException:
            reader.close()
            writer.close()
            raise
        try:
            # Only the child may hold the write end, or its death would not read as EOF.
            writer.close()
            return self._supervise(proc, reader, asked, timeout_s, stop)
        finally:
            reader.close()
            with contextlib.suppress(ValueError):  # still running: only if reaping timed out
                proc.close()
            _SHARED.finished()

    def _supervise(
        self,
        proc: ForkServerProcess,
        reader: Connection[Any, Any],
        asked: float,
        timeout_s: float | None,
        stop: StopSignal | None,
    ) -> ChildResult:
        pid = proc.pid
        assert pid is not None, "a started process has a pid"
        # A pidfd names this very process even after its pid is reused, which can happen once
        # the fork server reaps it.
        pidfd = _open_pidfd(pid)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        hello: dict[str, Any] | None = None
        message: tuple[bytes, bytes] | None = None
        killed_for: str | None = None
        exited = False
        watched: list[Connection[Any, Any] | int] = [reader, proc.sentinel]
        try:
            while True:
                if (stop is not None and stop.is_set()) or self._closing.is_set():
                    killed_for = "stop"
                    break
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    killed_for = "timeout"
                    break
                wait_s = (
                    POLL_INTERVAL_S if deadline is None else min(POLL_INTERVAL_S, deadline - now)
                )
                ready = connection.wait(watched, wait_s)
                if reader in ready:
                    try:
                        # Read before waiting for the exit: a child writing a big value blocks
                        # until the parent reads it.
                        kind = reader.recv_bytes()
                        body = reader.recv_bytes()
                    except EOFError:
                        # The child is gone, or dying: only the sentinel can say which.
                        watched = [proc.sentinel]
                        continue
                    if kind != _HELLO:
                        message = (kind, body)
                        break
                    hello = pickle.loads(body)
                    log.debug(
                        "child %d started its call %.1f ms after run()",
                        pid,
                        (hello["at"] - asked) * 1000,
                    )
                    if not hello["armed"]:
                        _warn_once(
                            "unarmed",
                            "the fork server did not load %s as its first preload module: "
                            "children may outlive a killed worker and re-run __main__",
                            __name__,
                        )
                    if not hello["released"]:
                        _warn_once(
                            "released",
                            "children cannot release the fork server's alive pipe on this "
                            "Python: a running child keeps the server, and itself, alive after "
                            "the worker is killed",
                        )
                    if hello["server_threads"] > 1:
                        _warn_once(
                            "threads",
                            "the fork server runs %d threads after importing its preload modules "
                            "(one starts threads at import): its children may deadlock",
                            hello["server_threads"],
                        )
                elif proc.sentinel in ready:
                    exited = True
                    break
            if killed_for is not None:
                _kill(pid, pidfd)
            elif message is not None and not connection.wait([proc.sentinel], _EXIT_GRACE_S):
                log.warning("child %d did not exit after delivering its result; killing it", pid)
                _kill(pid, pidfd)
            # Whatever the call left running in the child's process group goes with the child.
            _kill_group(pid)
            proc.join(_REAP_TIMEOUT_S)
        finally:
            if pidfd is not None:
                os.close(pidfd)
        code = proc.exitcode
        if code is None:
            log.error("child %d is still not reaped %.0f s after SIGKILL", pid, _REAP_TIMEOUT_S)
            if killed_for is None and message is None:
                raise IsolationError(f"child {pid} ended but could not be reaped")
        if killed_for == "timeout":
            return ChildResult(returncode=code, timed_out=True)
        if killed_for == "stop":
            return ChildResult(returncode=code, stopped=True)
        if message is not None:
            return _result_from(message)
        assert exited
        if hello is None:
            raise IsolationError(
                f"the child {ChildResult(returncode=code).describe_death()} before it could run "
                f"the call: is {__name__} importable by the fork server? (its traceback, if any, "
                "is on stderr)"
            )
        if code == 255 and not _process_running(hello["server"]):
            # multiprocessing reports 255 when the fork server is not there to tell the status;
            # the child then died of PR_SET_PDEATHSIG, and it was not the call's doing.
            raise IsolationError(f"the fork server died while child {pid} was running the call")
        return ChildResult(returncode=code)


def _result_from(message: tuple[bytes, bytes]) -> ChildResult:
    kind, body = message
    if kind == _VALUE:
        try:
            return ChildResult(value=pickle.loads(body))
        except Exception as exc:
            return ChildResult(
                error=f"the parent cannot unpickle the returned value: {_describe_exception(exc)}"
            )
    text = body.decode("utf-8", errors="replace")
    if kind == _SETUP:
        raise IsolationError(text)
    return ChildResult(error=text)


class _SharedForkServer:
    """The process's one multiprocessing fork server, shared by every open Isolator."""

    def __init__(self) -> None:
        # Also serialises Process.start(): it polls the processes other threads started (and
        # two threads polling one process can lose its exit status).
        self._lock = threading.Lock()
        self._wanted: dict[str, int] = {}  # preload module -> open Isolators asking for it
        self._started_with: tuple[str, ...] | None = None
        self._users = 0
        self._children = 0

    def enter(self, preload: tuple[str, ...]) -> None:
        with self._lock:
            self._users += 1
            for name in preload:
                self._wanted[name] = self._wanted.get(name, 0) + 1

    def leave(self, preload: tuple[str, ...]) -> None:
        with self._lock:
            self._users -= 1
            for name in preload:
                self._wanted[name] -= 1
                if not self._wanted[name]:
                    del self._wanted[name]
            if not self._users:
                self._stop()

    def start(self, proc: ForkServerProcess) -> None:
        with self._lock:
            wanted = tuple(self._wanted)
            stale = self._started_with is not None and not set(wanted) <= set(self._started_with)
            # Stopping the server kills the children it forked, so it takes in new modules only
            # when none is running; until then children import what the server lacks themselves.
            if stale and not self._children:
                self._stop()
            if self._started_with is None:
                _context().set_forkserver_preload([__name__, *wanted])
                self._started_with = wanted
            try:
                proc.start()  # starts the fork server first if it is not running
            except (OSError, EOFError) as exc:
                raise IsolationError(
                    f"the fork server could not start a child ({_describe_exception(exc)}); "
                    "its own traceback, if any, is on stderr"
                ) from exc
            # Keep multiprocessing's other users, and its exit handler, away from our children:
            # only the run() that started a child polls and joins it.
            children = getattr(process, "_children", None)
            if isinstance(children, set):
                children.discard(proc)
            self._children += 1

    def finished(self) -> None:
        with self._lock:
            self._children -= 1

    def _stop(self) -> None:
        """Stop the fork server (caller holds the lock, no child is running)."""
        self._started_with = None
        stop = getattr(forkserver._forkserver, "_stop", None)
        if not callable(stop):
            log.warning("cannot stop multiprocessing's fork server on this Python; it stays up")
            return
        # _stop() closes the pipe the server waits on, and waits for the server to exit.
        try:
            stop()
        except OSError as exc:  # it died earlier and someone else reaped it
            log.debug("stopping the fork server: %s", exc)


_SHARED = _SharedForkServer()


@functools.cache
def _context() -> ForkServerContext:
    return multiprocessing.get_context("forkserver")


# --- in the child -------------------------------------------------------------------------


def _child_main(
    conn: Connection[Any, Any],
    call: bytes,
    preload: tuple[str, ...],
    memory_limit_bytes: int | None,
    environ: dict[str, str],
) -> None:
    """The child's whole life: prepare, run the call, send one result, end at once."""
    status = 1
    try:
        released = _detach_from_worker()
        hello = {
            "at": time.monotonic(),
            "armed": _SERVER_PID is not None,
            "released": released,
            "server": os.getppid(),
            "server_threads": _SERVER_THREADS,
        }
        _send(conn, _HELLO, pickle.dumps(hello))
        os.environ.clear()
        os.environ.update(environ)
        kind, body = _prepare_and_call(call, preload, memory_limit_bytes)
        _send(conn, kind, body)
        status = 0
    except SystemExit as exc:
        # sys.exit() in the target ends the process with that status, as it would anywhere.
        if isinstance(exc.code, int) or exc.code is None:
            status = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BrokenPipeError:
        pass  # the parent gave up on us; nobody is listening
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        # Skip interpreter shutdown: non-daemon threads and atexit handlers of the call must not
        # keep a finished child alive; the parent kills whatever processes it left behind.
        os._exit(status)


def _prepare_and_call(
    call: bytes, preload: tuple[str, ...], memory_limit_bytes: int | None
) -> tuple[bytes, bytes]:
    problem = _import_preload(preload)
    if problem is not None:
        return _SETUP, problem.encode()
    try:
        target, args = pickle.loads(call)
    except Exception as exc:
        problem = _describe_exception(exc, exc.__traceback__)
        return _RAISED, f"the child cannot unpickle the call: {problem}".encode()
    return _call(target, args, memory_limit_bytes)


def _detach_from_worker() -> bool:
    """Make this child a process group of its own that dies with the fork server.

    Returns whether it could also let go of the server's alive pipe, which decides whether the
    server (and so this child) goes when the worker dies.
    """
    # Our own session and process group, so that one killpg() takes the call's subprocesses too.
    os.setsid()
    if _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL) and _SERVER_PID not in (None, os.getppid()):
        os._exit(1)  # the fork server died before we asked to die with it: nobody waits for us
    # The fork server exits when the worker's end of its "alive" pipe closes, but every child
    # inherits a copy of it; a running child would keep the server, and so itself, alive after
    # the worker died.
    server = forkserver._forkserver
    fd = getattr(server, "_forkserver_alive_fd", None)
    if not isinstance(fd, int):
        return False
    with contextlib.suppress(OSError):
        os.close(fd)
    setattr(server, "_forkserver_alive_fd", None)  # noqa: B010 - not in the stubs
    return True


def _import_preload(preload: tuple[str, ...]) -> str | None:
    """Why a preload module is unusable, or None; imports those the fork server lacks."""
    for name in preload:
        if name in _PRELOAD_ERRORS:
            return f"preload module {name!r} failed to import: {_PRELOAD_ERRORS[name]}"
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except (Exception, SystemExit) as exc:
                problem = _describe_exception(exc, exc.__traceback__)
                return f"preload module {name!r} failed to import: {problem}"
    return None


def _call(
    target: Callable[..., Any], args: tuple[Any, ...], memory_limit_bytes: int | None
) -> tuple[bytes, bytes]:
    lift = _limit_memory(memory_limit_bytes)
    try:
        value = target(*args)
    except Exception as exc:
        lift()
        return _RAISED, _describe_exception(exc, exc.__traceback__).encode()
    except BaseException:
        lift()
        raise
    # The limit is for the call; pickling a value that fit in it needs room of its own.
    lift()
    try:
        return _VALUE, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        return _RAISED, f"cannot pickle the returned value: {_describe_exception(exc)}".encode()


def _limit_memory(limit: int | None) -> Callable[[], None]:
    """Lower RLIMIT_AS's soft limit to `limit`; returns what puts the old one back."""
    if limit is None:
        return lambda: None
    import resource  # not on Windows, where this module never gets this far

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    new = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (new, hard))
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _send(conn: Connection[Any, Any], kind: bytes, body: bytes) -> None:
    conn.send_bytes(kind)
    conn.send_bytes(body)


# --- in the fork server -------------------------------------------------------------------


def _arm_fork_server() -> None:
    """Prepare the fork server, when it is this process and is importing its preload list."""
    global _SERVER_PID
    frame = _fork_server_main_frame()
    if frame is None:
        return
    _SERVER_PID = os.getpid()
    # forkserver.main is handed the worker's sys.path but (3.11 at least) leaves it unused, so
    # a preload module found only through the worker's path would be missing from the server.
    sys_path = frame.f_locals.get("sys_path")
    if isinstance(sys_path, list):
        sys.path[:] = [entry for entry in sys_path if isinstance(entry, str)]
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    # The server reaps adopted grandchildren in its SIGCHLD loop, which warns about each one.
    warnings.filterwarnings("ignore", message="forkserver: waitpid returned unexpected pid")
    spawn._fixup_main_from_path = _leave_main_alone  # type: ignore[attr-defined]
    spawn._fixup_main_from_name = _leave_main_alone  # type: ignore[attr-defined]
    atexit.register(_kill_children_at_exit)
    preload = frame.f_locals.get("preload")
    if isinstance(preload, list) and __name__ in preload:
        # forkserver.main iterates this very list and dies of any exception but ImportError, which
        # it ignores; in their place it now imports one name that _PreloadRest answers. That
        # happens only once this module's own import, and its package's, are complete.
        after_us = preload.index(__name__) + 1
        sys.meta_path.insert(0, _PreloadRest(preload[after_us:]))
        preload[after_us:] = [_PreloadRest.NAME]


class _PreloadRest(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """In the fork server: imports the rest of the preload list and records what fails."""

    NAME = "_pipeline_isolation_preload"

    def __init__(self, names: list[str]) -> None:
        self._names = [name for name in names if isinstance(name, str)]

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname == self.NAME else None

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        global _SERVER_THREADS
        sys.meta_path.remove(self)
        for name in self._names:
            try:
                importlib.import_module(name)
            except (Exception, SystemExit) as exc:
                _PRELOAD_ERRORS[name] = _describe_exception(exc, exc.__traceback__)
        # Threads started in C are not in threading.enumerate(); the kernel sees them all.
        try:
            _SERVER_THREADS = len(os.listdir("/proc/self/task"))
        except OSError:
            _SERVER_THREADS = threading.active_count()
        # What a preload module printed would otherwise sit in buffers that every child inherits.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()


def _fork_server_main_frame() -> FrameType | None:
    """The frame of multiprocessing.forkserver.main when it is importing this module."""
    main_code = getattr(forkserver.main, "__code__", None)
    serve_one_code = getattr(getattr(forkserver, "_serve_one", None), "__code__", None)
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code is serve_one_code:
            return None  # a child of the server, importing this module to unpickle its call
        if code is main_code:
            return frame
        frame = frame.f_back
    return None


def _leave_main_alone(_main: str) -> None:
    """Stands in for multiprocessing's re-import of the worker's __main__ in each child."""


def _kill_children_at_exit() -> None:
    """In the exiting fork server: kill every child's process group, and reap what dies."""
    if os.getpid() != _SERVER_PID:
        return
    give_up = time.monotonic() + _SERVER_EXIT_REAP_S
    while time.monotonic() < give_up:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return  # none left, zombies included
        for pid in _live_children(os.getpid()):
            _kill_group(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # unreaped, so the pid is still this child's
        time.sleep(0.01)


# --- helpers ------------------------------------------------------------------------------


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _prctl(option: int, arg: int) -> bool:
    """prctl(2); False where it does not exist or fails."""
    libc = _libc()
    if libc is None:
        return False
    result: int = libc.prctl(option, arg, 0, 0, 0)
    return result == 0


def _open_pidfd(pid: int) -> int | None:
    if sys.platform != "linux" or not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:  # already reaped, or a kernel before 5.3
        return None


def _kill(pid: int, pidfd: int | None) -> None:
    """SIGKILL a child that has not been reported dead, and its process group."""
    _kill_group(pid)
    # Also the child itself: until its first instruction (setsid) it has no group of its own.
    with contextlib.suppress(ProcessLookupError):
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)


def _kill_group(pgid: int) -> None:
    # Safe after the leader is reaped: Linux does not reuse a pid while a group still uses it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _process_running(pid: object) -> bool:
    """Whether our child `pid` has not ended, without reaping it."""
    if not isinstance(pid, int):
        return True
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False  # not ours, or reaped already


def _live_children(parent: int) -> list[int]:
    children = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            # The command name may hold spaces and parentheses; the fields after it do not.
            state, ppid = stat[stat.rfind(b")") + 2 :].split()[:2]
            if int(ppid) == parent and state != b"Z":
                children.append(int(entry))
    return children


def _describe_exception(exc: BaseException, tb: TracebackType | None = None) -> str:
    """ "TypeName: message", bounded, then the innermost frames of `tb` if given."""
    head = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if len(head) > _MESSAGE_MAX_CHARS:
        head = head[: _MESSAGE_MAX_CHARS - 3] + "..."
    # Our frames and the import system's say nothing about why a call or an import failed.
    frames = [
        frame
        for frame in traceback.extract_tb(tb)
        if frame.filename not in _OWN_FILES and not frame.filename.startswith("<frozen ")
    ][-_TRACEBACK_FRAMES:]
    lines = [head]
    for frame in frames:
        lines.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}')
        if frame.line:
            lines.append(f"    {frame.line.strip()}")
    return "\n".join(lines)


def _warn_once(key: str, message: str, *args: object) -> None:
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning(message, *args)


try:
    _arm_fork_server()
except Exception as exc:  # the server runs on without the guarantees; the parent warns
    print(f"{__name__}: could not prepare the fork server: {exc!r}", file=sys.stderr)
