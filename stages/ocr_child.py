"""The sandbox for PDFium and tesseract: a child process that the parent can always kill.

Parsing and rendering untrusted PDFs happens in C (PDFium), and so does OCR (tesseract); either
can hang, crash or allocate without bound. Everything that touches them runs in a separate Python
process started by :func:`run_child`:

* the child puts itself under ``RLIMIT_AS`` (address space) once its imports are done, and under
  ``RLIMIT_CPU`` as a backstop should the parent die (its soft limit kills with SIGXCPU, which
  tells our own limit apart from an outside SIGKILL such as the OOM killer's);
* the child gets only the environment variables it needs (:func:`child_environment`): it parses
  untrusted input, so the worker's secrets (``DATABASE_URL``, API keys, AWS credentials) stay out
  of its reach;
* for OCR the child renders the page to a PGM file, records that in its result, and then *execs*
  tesseract in its own place: tesseract keeps the pid, the process group and both limits, PDFium's
  memory is gone before tesseract starts, and there is never a grandchild that a kill could orphan
  (an orphan killed with its group would linger as a zombie under init);
* the child runs in a session (so a process group) of its own; the parent enforces the wall-clock
  timeout and sends SIGKILL to the whole group, which works however stuck the child is in C code,
  then reaps it;
* the parent owns the temporary work directory (request, rendered image, tesseract output,
  result) and removes it once the child is gone, so a killed child leaves no files behind.

At module level this file imports only the standard library: the parent imports it for
:func:`run_child`, the child runs it as a script (``python -P ocr_child.py request.json``) and only
then imports pypdfium2. It must not import anything from this package: the child cannot.

Protocol: the parent writes ``request.json`` into the work directory; the child writes
``result.json`` (atomically) holding ``{"ok": true, ...}`` or ``{"ok": false, "kind": ...,
"message": ...}``. A result with ``"stage": "tesseract"`` means the page was rendered and the
process then became tesseract: its exit status and output files (``ocr.txt``, ``ocr.tsv``) are
tesseract's. A child that leaves no result died (by a signal or an exit status) and the parent
draws its own conclusion. Kinds of failure:

``load``        the document cannot be opened; ``reason`` is ``password``, ``security``,
                ``no_pages`` or ``damaged``
``pdfium``      PDFium failed on the page (loading, text extraction, rendering)
``document``    some other property of the input makes the page unusable
``memory``      an allocation failed under the memory limit
``page_range``  the page index is outside the document (``page_count`` says how many pages)
``setup``       the environment is broken (pypdfium2 not importable, no tesseract binary)
``internal``    an unexpected exception: a bug, not the document's fault
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def run_child(
    request: dict[str, Any],
    *,
    timeout_s: float,
    memory_limit_bytes: int,
    collect: tuple[str, ...] = (),
) -> ChildOutcome:
    """Run one request in a fresh, killable child process and wait at most ``timeout_s``.

    ``collect`` names files the child may leave in its work directory; their text is read back
    before the directory is removed.
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
        command = [sys.executable, "-P", str(Path(__file__).resolve()), str(request_path)]
        with (workdir / STDERR_NAME).open("wb") as stderr:
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
        files = {}
        for name in collect:
            with contextlib.suppress(OSError):
                files[name] = (workdir / name).read_text(encoding="utf-8", errors="replace")
        return ChildOutcome(
            result=_read_result(workdir / RESULT_NAME),
            returncode=proc.returncode,
            timed_out=not exited,
            stderr_tail=_read_tail(workdir / STDERR_NAME),
            files=files,
        )


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
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return bool(poller.poll(0))
                if poller.poll(math.ceil(remaining * 1000)):
                    return True
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
    tesseract = request.get("tesseract")
    if not tesseract:
        raise _SetupError("tesseract binary not found on PATH")
    requested_dpi = int(request["dpi"])
    dpi = fit_dpi(width_pt, height_pt, requested_dpi, int(request["max_pixels"]))
    image = workdir / "page.pgm"
    _render_pgm(page, dpi, image)
    # tesseract IMAGE OUTBASE writes OUTBASE.txt and OUTBASE.tsv in one recognition pass.
    # No --dpi: tesseract's own estimate from the text size read the samples with a lower
    # error rate and ~10% faster than being told the render resolution.
    argv = [str(tesseract), str(image), str(workdir / "ocr")]
    argv += ["-l", str(request["lang"]), "txt", "tsv"]
    rendered = {"ok": True, "stage": "tesseract", "dpi": dpi, "requested_dpi": requested_dpi}
    return rendered, argv


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


def _render_pgm(page: Any, dpi: int, path: Path) -> None:
    """Render the page in 8-bit grey and write it as binary PGM (uncompressed netpbm)."""
    bitmap = page.render(scale=dpi / 72, grayscale=True)
    try:
        width, height, stride = bitmap.width, bitmap.height, bitmap.stride
        if bitmap.n_channels != 1:  # not expected with grayscale=True; convert to be safe
            bitmap.to_pil().convert("L").save(path, format="PPM")
            return
        buffer = memoryview(bitmap.buffer).cast("B")
        with path.open("wb") as out:
            out.write(b"P5\n%d %d\n255\n" % (width, height))
            if stride == width:
                out.write(buffer[: width * height])
            else:
                for row in range(height):
                    out.write(buffer[row * stride : row * stride + width])
    finally:
        bitmap.close()


_OPS: dict[str, Callable[[Any, dict[str, Any]], _OpResult]] = {
    "info": _op_info,
    "page": _op_page,
}


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv))
