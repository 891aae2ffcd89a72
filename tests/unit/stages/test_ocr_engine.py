"""ocr_page against real PDFium and a real tesseract, on PDFs written into tmp_path; no mocks."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from pg_pipeline import RetryableError
from pg_pipeline_documents import ocr_engine
from pg_pipeline_documents.errors import (
    DocumentError,
    KilledBySignal,
    OcrTimeout,
    signal_death_error,
)
from pg_pipeline_documents.ocr import fork_server
from pg_pipeline_documents.ocr.protocol import (
    CHILD_ENV_NAMES,
    CHILD_ENV_PREFIXES,
    RESULT_NAME,
    child_environment,
)
from pg_pipeline_documents.ocr.raster import fit_dpi
from pg_pipeline_documents.ocr_engine import mean_word_confidence, ocr_page, tesseract_available
from pg_pipeline_documents.pdfinfo import inspect_pdf
from tests.support.pdfs import encrypted_pdf, text_objects, write_pdf
from tests.support.waiting import wait_for


def text_layer_pdf(path: Path, text: bytes) -> Path:
    """One letter-size page with ``text`` in Helvetica: a real text layer."""
    return write_pdf(path, text_objects(text))


def scanned_pdf(path: Path, lines: str, *, size_px: tuple[int, int] = (1275, 1650)) -> Path:
    """A page that is only an image (letter size at 150 dpi by default): no text layer."""
    image = Image.new("L", size_px, 255)
    font = ImageFont.load_default(size=40)
    ImageDraw.Draw(image).multiline_text((100, 100), lines, fill=0, font=font, spacing=20)
    image.save(path, format="PDF", resolution=150)
    return path


NOTICE = "Invoice number 12345\nTender for road maintenance"
# A page tesseract reads for a while (about a second), so that a test can find the child at
# work: the two lines of NOTICE alone were read between two polls on a quick machine.
BUSY_NOTICE = NOTICE + "".join(
    f"\nLot {n}: resurfacing of road {n}, drainage and signs" for n in range(1, 25)
)
# The steps a test catches the child in last a second or less: look often.
QUICK = 0.01


@pytest.fixture(autouse=True)
def _fork_servers_stopped() -> Iterator[None]:
    """Each test starts its own fork server, and leaves no process of it behind."""
    yield
    servers = fork_server.fork_server_pids()
    fork_server.stop_fork_servers()
    assert [pid for pid in servers if _state(pid) != "gone"] == []


@pytest.fixture
def scan(tmp_path: Path) -> Path:
    return scanned_pdf(tmp_path / "scan.pdf", NOTICE)


@pytest.fixture
def busy_scan(tmp_path: Path) -> Path:
    return scanned_pdf(tmp_path / "busy.pdf", BUSY_NOTICE)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def test_text_layer_is_returned_without_ocr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdf = text_layer_pdf(tmp_path / "text.pdf", b"Hello from the text layer of this PDF")
    # With no tesseract to be found, any attempt at OCR would fail: the text must come from
    # the text layer alone.
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))

    page = ocr_page(pdf, 0)

    assert page.method == "text_layer"
    assert page.text == "Hello from the text layer of this PDF"
    assert page.confidence is None
    assert page.dpi is None


def test_image_page_is_ocred(scan: Path) -> None:
    page = ocr_page(scan, 0, dpi=150)

    assert page.method == "ocr"
    assert {"invoice", "12345", "tender", "road", "maintenance"} <= _words(page.text)
    assert page.confidence is not None and 60 <= page.confidence <= 100
    assert page.dpi == 150
    # The child's CPU, tesseract's included, for the stage to report (ctx.usage).
    assert page.child_cpu_s is not None and 0 < page.child_cpu_s < 60


def test_sparse_text_layer_falls_back_to_ocr(tmp_path: Path) -> None:
    pdf = text_layer_pdf(tmp_path / "short.pdf", b"Hello world")

    page = ocr_page(pdf, 0, dpi=150, min_text_chars=20)  # 10 non-space characters

    assert page.method == "ocr"
    assert {"hello", "world"} <= _words(page.text)


def _pids_mentioning(marker: str) -> list[int]:
    """Processes whose command line or working directory contains ``marker`` (zombies have
    neither). A child forked from the fork server has the server's command line, and works in
    its own directory; tesseract names its files in its arguments."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue  # gone meanwhile
            if marker.encode() in cmdline or marker in cwd:
                found.append(int(entry.name))
    return found


def _children_of(pid: int) -> list[int]:
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid ...: comm may hold spaces and parentheses.
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                children.append(int(entry.name))
    return children


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_timeout_kills_the_worker_and_leaves_nothing_behind(
    scan: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workroot = tmp_path / "work"
    workroot.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(workroot))  # the child's work dir goes here
    children_before = set(_children_of(os.getpid()))

    with pytest.raises(OcrTimeout, match=r"^page 1: OCR timed out after 0\.01 s$"):
        ocr_page(scan, 0, timeout_s=0.01)

    assert _pids_mentioning(str(tmp_path)) == []
    servers = fork_server.fork_server_pids()
    assert servers  # the child came from the fork server, which lives on for the next page
    assert set(_children_of(os.getpid())) - set(servers) <= children_before
    for server in servers:
        assert _children_of(server) == []  # killed and reaped: no zombie
    assert list(workroot.iterdir()) == []  # its files are gone too


def _argv(pid: int) -> list[str]:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def _state(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


@contextlib.contextmanager
def _paused(pid: int) -> Iterator[None]:
    """Hold the process still (SIGSTOP) so that what the test sees of it stays true."""
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_for(lambda: _state(pid) == "T", timeout=10, what=f"process {pid} to stop")
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def _runs(pid: int, program: str) -> bool:
    """Whether the process runs ``program``: tesseract's argv[0], or python's script."""
    return any(Path(arg).name == program for arg in _argv(pid)[:3])


def _child_in(workroot: Path, program: str) -> int:
    """The pid of the sandboxed child once it runs ``program``."""

    def find() -> int | None:
        return next((p for p in _pids_mentioning(str(workroot)) if _runs(p, program)), None)

    pid = wait_for(find, timeout=30, what=f"the OCR child to run {program}", max_interval=QUICK)
    assert pid is not None
    return pid


def _reading(workroot: Path) -> bool:
    """Whether the child has rendered its page and handed it to tesseract in its own process:
    it then says so in its result file, before recognition starts."""
    for result in workroot.glob(f"*/{RESULT_NAME}"):
        with contextlib.suppress(OSError, ValueError):
            if json.loads(result.read_text()).get("stage") == "tesseract":
                return True
    return False


def _child_reading(workroot: Path) -> int:
    """The pid of the sandboxed child once tesseract reads the page in it (no exec)."""
    wait_for(
        lambda: _reading(workroot),
        timeout=30,
        what="tesseract to read the page",
        max_interval=QUICK,
    )
    [pid] = [p for p in _pids_mentioning(str(workroot)) if _runs(p, "sandbox.py")]
    return pid


@pytest.fixture
def workroot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The directory the child's work directory goes into; empty again at the end."""
    root = tmp_path / "work"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    yield root
    assert list(root.iterdir()) == []


@pytest.mark.parametrize(
    ("step", "who"),
    [
        ("render", "renderer"),
        ("tesseract in the child", "tesseract"),
        ("tesseract command", "tesseract"),
    ],
)
def test_a_child_killed_from_outside_is_retryable(
    busy_scan: Path, workroot: Path, monkeypatch: pytest.MonkeyPatch, step: str, who: str
) -> None:
    # What the kernel's OOM killer (or an operator's kill -9) does: SIGKILL, from outside,
    # while the page renders, or while tesseract reads it (in the child, or as the command the
    # child became where there is no tesseract library).
    if step == "tesseract command":
        monkeypatch.setattr(ocr_engine, "tesseract_library", lambda: None)
    inspect_pdf(busy_scan)  # the fork server is up: the render is all there is before tesseract
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(ocr_page, busy_scan, 0, dpi=300, timeout_s=60)
        if step == "tesseract in the child":
            pid = _child_reading(workroot)
        else:
            pid = _child_in(workroot, "tesseract" if step == "tesseract command" else "sandbox.py")
        with _paused(pid):  # it cannot move on to the next step before the kill
            if step == "render":
                assert _runs(pid, "sandbox.py") and not _reading(workroot)
            elif step == "tesseract command":
                assert _runs(pid, "tesseract")
            os.kill(pid, signal.SIGKILL)
        with pytest.raises(KilledBySignal) as raised:
            future.result(timeout=30)

    assert isinstance(raised.value, RetryableError)
    assert raised.value.signum == signal.SIGKILL
    assert str(raised.value).startswith(
        f"page 1: {who} was killed by signal 9, SIGKILL from outside the worker"
    )


def test_our_own_cpu_limit_kills_with_sigxcpu_and_fails_the_page() -> None:
    # The child's RLIMIT_CPU must not look like the OOM killer's SIGKILL: its soft limit sends
    # SIGXCPU, which nobody else sends.
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(Path(fork_server.__file__).parents[2])!r})\n"
        "from pg_pipeline_documents.ocr.limits import apply_limits\n"
        "apply_limits(2**40, 1)\n"
        "while True:\n"
        "    pass\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], timeout=60, check=False)

    assert proc.returncode == -signal.SIGXCPU
    error = signal_death_error("page 1: tesseract", proc.returncode)
    assert isinstance(error, DocumentError)
    assert str(error) == "page 1: tesseract used up its CPU time limit (signal 24, SIGXCPU)"


@pytest.mark.parametrize(
    ("signum", "permanent", "wording"),
    [
        (signal.SIGKILL, False, "was killed by signal 9, SIGKILL from outside the worker"),
        (signal.SIGTERM, False, "was killed by signal 15, SIGTERM from outside the worker"),
        (signal.SIGSEGV, False, "crashed (signal 11, SIGSEGV)"),
        (signal.SIGABRT, False, "crashed (signal 6, SIGABRT)"),
        (signal.SIGBUS, False, "crashed (signal 7, SIGBUS)"),
        (signal.SIGXCPU, True, "used up its CPU time limit (signal 24, SIGXCPU)"),
    ],
)
def test_which_signal_deaths_are_retried(signum: int, permanent: bool, wording: str) -> None:
    error = signal_death_error("page 4: renderer", -signum, ": stderr")

    assert isinstance(error, DocumentError) is permanent
    assert isinstance(error, RetryableError) is not permanent
    assert str(error).startswith(f"page 4: renderer {wording}")
    assert str(error).endswith(": stderr")


def test_the_child_sees_none_of_the_workers_secrets(
    busy_scan: Path, workroot: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "DATABASE_URL": "postgresql://app:hunter2-db@db.internal/app",
        "PIPELINE_LLM_API_KEY": "sk-hunter2-llm",
        "AWS_SECRET_ACCESS_KEY": "hunter2-aws",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    seen: dict[str, dict[str, str]] = {}
    inspect_pdf(busy_scan)  # the fork server is up: the render is all there is before tesseract

    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(ocr_page, busy_scan, 0, dpi=300, timeout_s=60)
        pid = _child_reading(workroot)
        with _paused(pid):
            raw = (Path("/proc") / str(pid) / "environ").read_bytes().decode()
        seen["in-process"] = dict(item.split("=", 1) for item in raw.split("\0") if item)
        pages = [future.result(timeout=60)]
    # Without the library, the child execs the tesseract command: before and after the exec.
    monkeypatch.setattr(ocr_engine, "tesseract_library", lambda: None)
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(ocr_page, busy_scan, 0, dpi=300, timeout_s=60)
        for program in ("sandbox.py", "tesseract"):
            pid = _child_in(workroot, program)
            with _paused(pid):
                assert _runs(pid, program)
                raw = (Path("/proc") / str(pid) / "environ").read_bytes().decode()
            seen[program] = dict(item.split("=", 1) for item in raw.split("\0") if item)
        pages.append(future.result(timeout=60))

    # The reduced environment is enough to OCR, either way.
    assert ["invoice" in _words(page.text) for page in pages] == [True, True]
    assert set(seen) == {"in-process", "sandbox.py", "tesseract"}
    for env in seen.values():
        assert env["PATH"] == os.environ["PATH"]
        assert env["LC_ALL"] == "C.UTF-8"
        assert env["OMP_THREAD_LIMIT"] == "1"
        assert not set(secrets) & set(env)
        assert not [v for v in env.values() if "hunter2" in v]
        assert set(env) <= CHILD_ENV_NAMES | {"OMP_THREAD_LIMIT"} | {
            n for n in env if n.startswith(CHILD_ENV_PREFIXES)
        }


def test_child_environment_keeps_only_what_the_child_needs() -> None:
    parent = {
        "PATH": "/usr/bin",
        "LC_CTYPE": "C.UTF-8",
        "TESSDATA_PREFIX": "/opt/tessdata",
        "OMP_THREAD_LIMIT": "8",
        "DATABASE_URL": "postgresql://app:pw@db/app",
        "AWS_ACCESS_KEY_ID": "AKIA",
        "PIPELINE_BLOB_URL": "s3://bucket",
    }

    assert child_environment(parent) == {
        "PATH": "/usr/bin",
        "LC_CTYPE": "C.UTF-8",
        "TESSDATA_PREFIX": "/opt/tessdata",
        "OMP_THREAD_LIMIT": "1",
    }


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        ocr_page(tmp_path / "nowhere.pdf", 0)


def test_memory_limit_fails_the_page_not_the_caller(tmp_path: Path) -> None:
    # 1500 x 1500 pt at 600 dpi is 12500 x 12500 = 156 MB of grey pixels: more than 256 MiB of
    # address space leaves once Python, PDFium and tesseract's model are loaded.
    big = scanned_pdf(tmp_path / "poster.pdf", "Big", size_px=(3125, 3125))

    with pytest.raises(DocumentError, match=r"^page 1: .*memory"):
        ocr_page(big, 0, dpi=600, memory_limit_bytes=256 * 1024**2, max_pixels=10**9)


def test_pixel_cap_lowers_the_dpi(scan: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="pg_pipeline_documents.ocr_engine")

    page = ocr_page(scan, 0, dpi=300, max_pixels=1_000_000)

    assert page.dpi is not None and page.dpi < 300
    assert math.ceil(612 * page.dpi / 72) * math.ceil(792 * page.dpi / 72) <= 1_000_000
    assert "invoice" in _words(page.text)
    assert f"rendered at {page.dpi} dpi instead of 300" in caplog.text


def test_fit_dpi() -> None:
    # Letter at 300 dpi: 2550 x 3301 (PDFium rounds 792 * 300/72 = 3300.0000000000005 up).
    assert fit_dpi(612, 792, 300, 60_000_000) == 300
    assert fit_dpi(612, 792, 300, 2550 * 3301) == 300  # exactly at the cap
    assert fit_dpi(612, 792, 300, 2550 * 3301 - 1) == 299
    lowered = fit_dpi(2384, 3370, 300, 60_000_000)  # A0 poster
    assert lowered == 196
    assert math.ceil(2384 * lowered / 72) * math.ceil(3370 * lowered / 72) <= 60_000_000


def test_encrypted_document(tmp_path: Path) -> None:
    locked = encrypted_pdf(tmp_path / "locked.pdf")
    with pytest.raises(DocumentError, match=r"^page 1: PDF is encrypted \(password protected\)$"):
        ocr_page(locked, 0)


def test_damaged_document(scan: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(scan.read_bytes()[:1000])
    with pytest.raises(DocumentError, match=r"^page 1: PDFium could not open the document"):
        ocr_page(cut, 0)


def test_page_outside_the_document(scan: Path) -> None:
    with pytest.raises(IndexError, match=r"page 3 does not exist: the document has 1 pages"):
        ocr_page(scan, 2)


def test_mean_word_confidence() -> None:
    header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num"
    header += "\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [
        "1\t1\t0\t0\t0\t0\t0\t0\t100\t100\t-1\t",
        "5\t1\t1\t1\t1\t1\t0\t0\t10\t10\t90.5\tTender",
        "5\t1\t1\t1\t1\t2\t0\t0\t10\t10\t70.5\tnotice",
        "5\t1\t1\t1\t1\t3\t0\t0\t10\t10\t95\t ",
    ]
    assert mean_word_confidence("\n".join([header, *rows])) == pytest.approx(80.5)
    assert mean_word_confidence(header) is None


def test_tesseract_version() -> None:
    version = tesseract_available()
    assert version is not None and re.match(r"^\d+\.\d+", version)
