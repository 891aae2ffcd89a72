"""Targets for tests/unit/pipeline/test_isolation.py: fork server children import them by name."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

#: The process that imported this module: a child that finds someone else's pid here got the
#: module from the fork server's preload.
IMPORTED_IN = os.getpid()


def add(a: int, b: int) -> int:
    return a + b


def echo(value: Any) -> Any:
    return value


def fail(message: str) -> None:
    raise ValueError(message)


def exit_with(status: int) -> None:
    os._exit(status)


def sys_exit(status: int) -> None:
    sys.exit(status)


def kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def huge(size: int) -> bytes:
    return b"x" * size


def unpicklable() -> object:
    return threading.Lock()


def allocate(size: int) -> int:
    return len(bytearray(size))


def rlimit_as() -> tuple[int, int]:
    return resource.getrlimit(resource.RLIMIT_AS)


def getenv(name: str) -> str | None:
    return os.environ.get(name)


def process_info() -> dict[str, Any]:
    from multiprocessing import spawn

    from pg_pipeline import isolation

    return {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "pgid": os.getpgid(0),
        "sid": os.getsid(0),
        "imported_in": IMPORTED_IN,
        "server_pid": isolation._SERVER_PID,
        "server_threads": isolation._SERVER_THREADS,
        "address_space": Path("/proc/self/status").read_text().split("VmSize:")[1].split()[0],
        "main_left_alone": spawn._fixup_main_from_path is isolation._leave_main_alone,  # type: ignore[attr-defined]
        "cwd": os.getcwd(),
    }


def _spawn_sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def sleep(seconds: float, pid_file: str | None = None) -> None:
    """Write this process's pid to `pid_file` (atomically), then sleep."""
    if pid_file is not None:
        _write(pid_file, f"{os.getpid()}")
    time.sleep(seconds)


def sleep_with_grandchild(seconds: float, pid_file: str) -> None:
    """Start a grandchild, write "child grandchild" to `pid_file`, sleep."""
    grandchild = _spawn_sleeper()
    _write(pid_file, f"{os.getpid()} {grandchild.pid}")
    time.sleep(seconds)


def leave_grandchild() -> int:
    """Return while a grandchild still runs."""
    return _spawn_sleeper().pid


def report_and_sleep(seconds: float) -> None:
    """For the parent-death test: print "child server grandchild" pids on stdout, then sleep."""
    grandchild = _spawn_sleeper()
    print(f"{os.getpid()} {os.getppid()} {grandchild.pid}", flush=True)
    time.sleep(seconds)


def _write(path: str, text: str) -> None:
    scratch = Path(f"{path}.tmp")
    scratch.write_text(text)
    scratch.replace(path)
