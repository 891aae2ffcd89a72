"""A sandboxed child's work: read its request, put itself under its limits, run the op, write
the result, and for the tesseract command become it (see :mod:`ocr` for the protocol)."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pg_pipeline_documents.ocr.limits import apply_limits, no_core_files
from pg_pipeline_documents.ocr.pdf_ops import op_info, op_page, op_region
from pg_pipeline_documents.ocr.protocol import (
    OpResult,
    SetupError,
    child_environment,
    failure,
    write_result,
)

_OPS: dict[str, Callable[[Any, dict[str, Any]], OpResult]] = {
    "info": op_info,
    "page": op_page,
    "region": op_region,
}


def child_main(request_path: str) -> int:
    """Do what the request at ``request_path`` asks; the exit status for the process."""
    no_core_files()
    workdir: Path | None = None
    try:
        request: dict[str, Any] = json.loads(Path(request_path).read_text(encoding="utf-8"))
        workdir = Path(request["workdir"])
        # Import before the memory limit applies: the limit is for the document's work, and a
        # failure here is the environment's fault, reported as such.
        import pypdfium2

        op = _OPS[request["op"]]
    except Exception as exc:
        if workdir is None:
            raise  # no way to report: the traceback goes to stderr, the exit status says 1
        write_result(workdir, failure("setup", f"{type(exc).__name__}: {exc}"))
        return 0
    apply_limits(int(request["memory_limit_bytes"]), int(request["cpu_limit_s"]))
    exec_argv: list[str] | None = None
    try:
        result, exec_argv = op(pypdfium2, request)
    except MemoryError:
        result = failure("memory", "out of memory")
    except OSError as exc:
        if exc.errno == errno.ENOMEM:
            result = failure("memory", str(exc))
        else:
            result = failure("internal", f"{type(exc).__name__}: {exc}")
    except pypdfium2.PdfiumError as exc:
        result = failure("pdfium", str(exc))
    except SetupError as exc:
        result = failure("setup", str(exc))
    except Exception as exc:
        result = failure("internal", f"{type(exc).__name__}: {exc}")
    write_result(workdir, result)
    if exec_argv is not None:
        # Become tesseract (see the package docstring). Limits, pid and group carry over, and so
        # does this process's environment, already reduced by the parent.
        try:
            os.execve(exec_argv[0], exec_argv, child_environment(os.environ))
        except OSError as exc:
            kind = "memory" if exc.errno == errno.ENOMEM else "setup"
            write_result(workdir, failure(kind, f"cannot run tesseract: {exc}"))
    return 0
