"""The limits a child puts itself under once its imports are done.

``RLIMIT_AS`` bounds what PDFium and tesseract may allocate; ``RLIMIT_CPU`` is a backstop should
the parent die (the parent's wall clock comes first). Its soft limit kills with SIGXCPU, which
tells our own limit apart from an outside SIGKILL such as the OOM killer's.
"""

from __future__ import annotations

import resource

# How much CPU time past its soft RLIMIT_CPU (SIGXCPU) a child gets before the hard limit's
# SIGKILL: only something that ignores SIGXCPU ever reaches it (Python and tesseract do not).
_CPU_HARD_MARGIN_S = 5


def no_core_files() -> None:
    """A crashing renderer with gigabytes mapped would write a core file into the cwd."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def apply_limits(memory_limit_bytes: int, cpu_limit_s: int) -> None:
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
