"""pg_pipeline.isolation: calls in killable children of a shared, preloaded fork server.

Real processes throughout (no database). Most tests share one Isolator (class scope, so one fork
server start); the lifecycle tests below the class need the process's fork server to themselves
and run after it, once the class's Isolator is closed.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import resource_tracker
from pathlib import Path
from typing import IO, Any

import pytest

from pg_pipeline import isolation
from pg_pipeline.isolation import ChildResult, IsolationError, Isolator
from tests.support import isolation_targets as targets
from tests.support.paths import REPO
from tests.support.waiting import wait_for

ROOT = REPO
TARGETS = "tests.support.isolation_targets"


def _state(pid: int) -> str | None:
    """The process's state letter ("Z" for a zombie), or None once it is gone entirely."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat[stat.rfind(b")") + 2 :].split()[0].decode()


def _gone(pid: int) -> bool:
    return _state(pid) is None


def _children_of(parent: int) -> set[int]:
    children = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            if int(stat[stat.rfind(b")") + 2 :].split()[1]) == parent:
                children.add(int(entry))
    return children


def _pids(path: Path) -> list[int]:
    """The pids a target wrote to `path`, once it has."""

    def read() -> list[int]:
        return [int(p) for p in path.read_text().split()] if path.exists() else []

    return wait_for(read, timeout=10, what=f"pids in {path}")


def _run_in_thread(
    isolator: Isolator, *args: Any, **kwargs: Any
) -> tuple[threading.Thread, list[tuple[ChildResult, float]]]:
    """Start isolator.run(*args, **kwargs) in a thread; the list gets (result, monotonic end)."""
    box: list[tuple[ChildResult, float]] = []

    def run() -> None:
        result = isolator.run(*args, **kwargs)
        box.append((result, time.monotonic()))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


@pytest.fixture(scope="class")
def iso() -> Iterator[Isolator]:
    with Isolator(preload=[TARGETS]) as isolator:
        # Start the fork server now, so that no test's timing includes its start.
        assert isolator.run(targets.add, (1, 1)).value == 2
        yield isolator


class TestRun:
    def test_returns_the_value(self, iso: Isolator) -> None:
        result = iso.run(targets.add, (2, 3))
        assert result == ChildResult(value=5)
        assert result.returned and not result.died
        assert iso.run(targets.echo, (None,)).returned

    def test_a_raising_target_gives_its_error_and_traceback_tail(self, iso: Isolator) -> None:
        result = iso.run(targets.fail, ("bad input",))
        assert result.error is not None
        assert result.error.startswith("ValueError: bad input\n")
        assert "isolation_targets.py" in result.error and "in fail" in result.error
        assert "isolation.py" not in result.error, "our own frames are noise"
        assert not result.returned and not result.died and result.returncode is None

    def test_a_value_that_cannot_be_pickled_back_is_an_error(self, iso: Isolator) -> None:
        result = iso.run(targets.unpicklable)
        assert result.error is not None
        assert result.error.startswith("cannot pickle the returned value: TypeError")
        assert "lock" in result.error
        assert not result.returned

    def test_a_call_that_cannot_be_pickled_raises(self, iso: Isolator) -> None:
        with pytest.raises(IsolationError, match="cannot pickle the call"):
            iso.run(lambda: 1)

        def in_main() -> None: ...

        in_main.__module__ = "__main__"  # as a function of the worker's script would be
        with pytest.raises(IsolationError, match="defined in __main__"):
            iso.run(in_main)

    def test_exit_status_and_signal_deaths(self, iso: Isolator) -> None:
        exited = iso.run(targets.exit_with, (3,))
        assert exited == ChildResult(returncode=3)
        assert exited.died and not exited.returned
        assert exited.describe_death() == "exited with status 3"

        assert iso.run(targets.sys_exit, (4,)) == ChildResult(returncode=4)
        assert iso.run(targets.exit_with, (0,)).died, "status 0 without a result is a death"

        killed = iso.run(targets.kill_self)
        assert killed == ChildResult(returncode=-signal.SIGKILL)
        assert killed.died and killed.describe_death() == "killed by SIGKILL"

    def test_a_timeout_kills_the_child_and_its_process_group(
        self, iso: Isolator, tmp_path: Path
    ) -> None:
        pid_file = tmp_path / "pids"
        started = time.monotonic()
        result = iso.run(targets.sleep_with_grandchild, (30.0, str(pid_file)), timeout_s=0.5)
        elapsed = time.monotonic() - started
        assert result == ChildResult(returncode=-signal.SIGKILL, timed_out=True)
        assert not result.died and not result.returned
        assert 0.5 <= elapsed < 1.0
        child, grandchild = _pids(pid_file)
        assert _gone(child), "run() returns once the child is reaped: no zombie"
        # The fork server adopts and reaps it at once; init, in some containers, takes seconds.
        wait_for(lambda: _gone(grandchild), timeout=2, what="the grandchild to be reaped")

    def test_setting_stop_from_another_thread_kills_the_child_promptly(
        self, iso: Isolator, tmp_path: Path
    ) -> None:
        stop = threading.Event()
        pid_file = tmp_path / "pid"
        thread, box = _run_in_thread(iso, targets.sleep, (30.0, str(pid_file)), stop=stop)
        [child] = _pids(pid_file)
        stopped_at = time.monotonic()
        stop.set()
        thread.join(5)
        [(result, ended)] = box
        assert result == ChildResult(returncode=-signal.SIGKILL, stopped=True)
        assert ended - stopped_at < 0.5
        assert _gone(child)

    def test_stop_already_set_starts_no_child(self, iso: Isolator) -> None:
        stop = threading.Event()
        stop.set()
        assert iso.run(targets.add, (1, 2), stop=stop) == ChildResult(stopped=True)

    def test_a_huge_value_comes_back_whole(self, iso: Isolator) -> None:
        # Far beyond a pipe's buffer: the child blocks writing until the parent reads.
        result = iso.run(targets.huge, (64 << 20,))
        assert result.returned
        assert len(result.value) == 64 << 20

    def test_the_memory_limit_applies_to_the_call_only(self, iso: Isolator) -> None:
        limit = 768 << 20
        result = iso.run(targets.allocate, (2 << 30,), memory_limit_bytes=limit)
        assert result.error is not None and result.error.startswith("MemoryError"), result
        assert iso.run(targets.rlimit_as, memory_limit_bytes=limit).value[0] == limit
        assert iso.run(targets.rlimit_as).value[0] != limit, "the next child has no limit"

    def test_the_child_is_a_session_of_its_own_forked_by_the_preloaded_server(
        self, iso: Isolator
    ) -> None:
        info = iso.run(targets.process_info).value
        assert info["sid"] == info["pgid"] == info["pid"]
        assert info["server_pid"] == info["ppid"], "armed by this module's import in the server"
        assert info["imported_in"] == info["ppid"], "the server preloaded the targets"
        assert info["server_threads"] == 1, "forking is safe only from a single thread"
        assert info["main_left_alone"]
        assert info["cwd"] == os.getcwd()

    def test_the_child_sees_the_environment_as_it_is_at_run_time(
        self, iso: Isolator, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PGP_ISOLATION_TEST", "set after the fork server started")
        assert iso.run(targets.getenv, ("PGP_ISOLATION_TEST",)).value == (
            "set after the fork server started"
        )

    def test_processes_a_call_leaves_behind_are_killed(self, iso: Isolator) -> None:
        result = iso.run(targets.leave_grandchild)
        assert result.returned
        wait_for(lambda: _gone(result.value), timeout=5, what="the left-behind grandchild to go")

    def test_eight_threads_run_at_once(self, iso: Isolator) -> None:
        def job(n: int) -> tuple[int, ChildResult]:
            kind = n % 5
            if kind == 0:
                return n, iso.run(targets.add, (n, 1))
            if kind == 1:
                return n, iso.run(targets.fail, (f"job {n}",))
            if kind == 2:
                return n, iso.run(targets.exit_with, (n % 7 + 1,))
            if kind == 3:
                return n, iso.run(targets.sleep, (30.0,), timeout_s=0.3)
            return n, iso.run(targets.huge, (n << 16,))

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(job, range(40)))
        for n, result in results:
            kind = n % 5
            if kind == 0:
                assert result == ChildResult(value=n + 1)
            elif kind == 1:
                assert result.error is not None and result.error.startswith(f"ValueError: job {n}")
            elif kind == 2:
                assert result == ChildResult(returncode=n % 7 + 1)
            elif kind == 3:
                assert result == ChildResult(returncode=-signal.SIGKILL, timed_out=True)
            else:
                assert result.returned and len(result.value) == n << 16
        assert time.monotonic() - started < 8


def test_child_result_descriptions() -> None:
    assert ChildResult(value=1).describe_death() == "returned a result"
    assert ChildResult(error="E: x").describe_death() == "raised an exception"
    assert ChildResult(returncode=-11).describe_death() == "killed by SIGSEGV"
    assert ChildResult(returncode=-99).describe_death() == "killed by signal 99"
    assert ChildResult(returncode=0).describe_death() == (
        "exited with status 0 without returning a result"
    )
    timed_out = ChildResult(returncode=-9, timed_out=True)
    assert timed_out.describe_death() == "killed by SIGKILL after its timeout"
    assert not timed_out.died and not timed_out.returned
    assert (
        ChildResult(returncode=-9, stopped=True).describe_death() == "killed by SIGKILL on request"
    )
    assert ChildResult(stopped=True).describe_death() == "stopped before a child was started"


def test_preload_names_are_checked() -> None:
    with pytest.raises(ValueError, match="never preload __main__"):
        Isolator(preload=["__main__"])
    with pytest.raises(ValueError, match="module names"):
        Isolator(preload=["not a module"])
    with pytest.raises(TypeError, match="not a single string"):
        Isolator(preload=TARGETS)


# --- lifecycle: these need the fork server to themselves ------------------------------------


@pytest.fixture
def own_fork_server() -> None:
    assert isolation._SHARED._users == 0, "another Isolator is open; these tests run last"


@pytest.mark.usefixtures("own_fork_server")
def test_a_failing_preload_module_is_a_clear_error_that_spares_other_isolators() -> None:
    with (
        Isolator(preload=[TARGETS]) as good,
        Isolator(preload=["tests.no_such_module"]) as missing,
        Isolator(preload=["tests.support.isolation_broken"]) as broken,
    ):
        started = time.monotonic()
        with pytest.raises(IsolationError) as raised:
            missing.run(targets.add, (1, 2))
        assert "preload module 'tests.no_such_module' failed to import" in str(raised.value)
        assert "ModuleNotFoundError" in str(raised.value)
        with pytest.raises(IsolationError) as raised:
            broken.run(targets.add, (1, 2))
        assert "preload module 'tests.support.isolation_broken' failed to import" in str(
            raised.value
        )
        assert "RuntimeError: tests.support.isolation_broken fails on import on purpose" in str(
            raised.value
        )
        assert good.run(targets.add, (1, 2)).value == 3
        info = good.run(targets.process_info).value
        assert info["imported_in"] == info["ppid"], "the server survived and preloaded the rest"
        assert time.monotonic() - started < 10
    assert isolation._SHARED._users == 0


@pytest.mark.usefixtures("own_fork_server")
def test_new_preload_modules_reach_the_server_once_no_child_runs(tmp_path: Path) -> None:
    with Isolator() as first:
        thread, box = _run_in_thread(first, targets.sleep, (30.0, str(tmp_path / "pid")))
        _pids(tmp_path / "pid")
        with Isolator(preload=[TARGETS]) as second:
            # A child is running, so the server stays as it is and the child imports the module.
            info = second.run(targets.process_info).value
            assert info["imported_in"] == info["pid"]
            first.close()
            thread.join(5)
            assert box[0][0].stopped
            # Idle now: the server restarts with the module preloaded.
            info = second.run(targets.process_info).value
            assert info["imported_in"] == info["ppid"]


@pytest.mark.usefixtures("own_fork_server")
def test_close_kills_running_children_and_leaves_no_process_behind(tmp_path: Path) -> None:
    before = _children_of(os.getpid())
    isolator = Isolator(preload=[TARGETS])
    server = isolator.run(targets.process_info).value["ppid"]
    left_behind = isolator.run(targets.leave_grandchild).value
    pid_file = tmp_path / "pids"
    thread, box = _run_in_thread(isolator, targets.sleep_with_grandchild, (30.0, str(pid_file)))
    child, grandchild = _pids(pid_file)

    isolator.close()

    thread.join(5)
    assert box[0][0] == ChildResult(returncode=-signal.SIGKILL, stopped=True)
    for pid in (server, child, grandchild, left_behind):
        assert _gone(pid), f"process {pid} is still there ({_state(pid)})"
    # multiprocessing's resource tracker is the process's, not the fork server's: it stays, idle,
    # and ends with this process.
    tracker = getattr(resource_tracker._resource_tracker, "_pid", None)
    assert _children_of(os.getpid()) - before <= {tracker}
    with pytest.raises(IsolationError, match="closed"):
        isolator.run(targets.add, (1, 2))
    isolator.close()  # twice is fine


PARENT = f"""
import threading
from pg_pipeline.isolation import Isolator
from tests.support import isolation_targets
isolator = Isolator(preload=[{TARGETS!r}])
threading.Thread(
    target=isolator.run, args=(isolation_targets.report_and_sleep, (60.0,)), daemon=True
).start()
threading.Event().wait()
"""


def _read_line(stream: IO[str], timeout: float) -> str:
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no line within {timeout} s") from None


def test_the_child_dies_with_a_killed_parent() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    pids: list[int] = []
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in _read_line(parent.stdout, timeout=30).split()]
        child, server, grandchild = pids
        assert _state(child) is not None and _state(grandchild) is not None

        parent.kill()
        parent.wait(5)

        # The server reaps the child and the grandchild (a subreaper) before it exits; the
        # server itself is left to init, which in some containers never reaps: a zombie is dead.
        wait_for(lambda: _gone(child) and _gone(grandchild), timeout=10, what="child to go")
        wait_for(lambda: _state(server) in (None, "Z"), timeout=10, what="fork server to go")
    finally:
        parent.kill()
        parent.wait(5)
        for pid in pids:
            if _state(pid) not in (None, "Z"):
                os.kill(pid, signal.SIGKILL)
        if parent.stdout is not None:
            parent.stdout.close()
