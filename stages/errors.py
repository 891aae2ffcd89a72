"""Errors raised by the document stages, and which death of a sandboxed child is whose fault.

The queue decides what to do with a failed job from the class of the error:

* :class:`DocumentError` is permanent: the input itself is bad (not a PDF, encrypted, damaged, a
  page that needs more memory or CPU than its limits allow). Retrying the same bytes cannot help;
  the message is meant for a human and says what is wrong.
* :class:`OcrTimeout` is transient: the work did not finish in time, which may be load on the
  machine as much as the page. A retry may succeed.
* :class:`KilledBySignal` is transient: the child process that parses, renders or OCRs a page died
  by a signal that was not one of our own limits (see :func:`signal_death_error`).
"""

from __future__ import annotations

import signal

from pg_pipeline import RetryableError
from pg_pipeline_documents.ocr.processes import signal_name


class DocumentError(Exception):
    """Permanent failure caused by the input document; retrying cannot help."""


class OcrTimeout(Exception):
    """Transient failure: the work ran past its wall-clock limit and was killed; retry may help."""


class KilledBySignal(RetryableError):
    """Transient failure: the sandboxed child died by signal ``signum``, not by our own limits."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum


# Signals a program raises against itself when it crashes, as opposed to being killed.
_CRASH_SIGNALS = frozenset(
    {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE, signal.SIGILL, signal.SIGTRAP}
)


def signal_death_error(who: str, returncode: int, detail: str = "") -> Exception:
    """The error for a sandboxed child (``who``: "page 3: renderer") that died by signal
    ``-returncode`` without the parent killing it for its wall-clock timeout. ``detail`` (the
    child's stderr, say) is appended to the message.

    * SIGXCPU is our own CPU limit (the child's soft ``RLIMIT_CPU``; nobody else sends it): the
      page needs more CPU than it may have, and will again, so it is permanent.
    * SIGKILL, SIGTERM and the like come from outside: the kernel's OOM killer when the machine
      (or the container) is short of memory, or an operator. Our own memory limit does not kill:
      ``RLIMIT_AS`` makes allocations fail, which the child reports as a ``memory`` failure. So
      the page is not at fault, and a retry, perhaps on a less loaded worker, may succeed.
    * SIGSEGV, SIGABRT, SIGBUS ... are crashes inside PDFium or tesseract. A malformed page can
      cause one every time, but so can a transient fault (memory pressure making an unchecked
      allocation fail, a bad host). They are retried too: the stage's ``max_attempts`` bounds the
      cost of a page that crashes on every attempt, and its last error still names the signal.
    """
    signum = -returncode
    name = signal_name(returncode)
    if signum == signal.SIGXCPU:
        return DocumentError(f"{who} used up its CPU time limit ({name}){detail}")
    if signum in _CRASH_SIGNALS:
        return KilledBySignal(f"{who} crashed ({name}){detail}", signum)
    return KilledBySignal(
        f"{who} was killed by {name} from outside the worker (the kernel's OOM killer or an "
        f"operator?){detail}",
        signum,
    )
