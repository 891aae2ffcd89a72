"""The OCR child's fork server and blank-page check, against real PDFium and tesseract."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from pg_pipeline_documents.errors import KilledBySignal
from pg_pipeline_documents.ocr import fork_server, runner
from pg_pipeline_documents.ocr_engine import ocr_page
from pg_pipeline_documents.pdfinfo import inspect_pdf
from tests.support.waiting import wait_for


@pytest.fixture(autouse=True)
def _fork_servers_stopped() -> Iterator[None]:
    yield
    fork_server.stop_fork_servers()


def _scan(path: Path, draw: str = "", *, specks: int = 0, dpi: int = 200) -> Path:
    """An A4 page that is only an image: ``draw`` in 10 pt type, and ``specks`` dark dots."""
    image = Image.new("L", (int(8.27 * dpi), int(11.69 * dpi)), 255)
    if draw:
        font = ImageFont.load_default(size=round(10 * dpi / 72))
        ImageDraw.Draw(image).multiline_text((dpi, dpi), draw, fill=0, font=font, spacing=8)
    rng = random.Random(7)
    pixels = image.load()
    assert pixels is not None
    for _ in range(specks):
        pixels[rng.randrange(image.width), rng.randrange(image.height)] = rng.randrange(120)
    image.save(path, format="PDF", resolution=dpi)
    return path


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def test_a_blank_scan_is_reported_blank_without_ocr(tmp_path: Path) -> None:
    page = ocr_page(_scan(tmp_path / "blank.pdf", specks=3000), 0, dpi=200)

    assert page.method == "blank"
    assert page.text == ""
    assert page.confidence is None
    assert page.dpi == 200


def test_a_page_with_one_word_is_not_blank(tmp_path: Path) -> None:
    page = ocr_page(_scan(tmp_path / "word.pdf", "Annex", specks=3000), 0, dpi=200)

    assert page.method == "ocr"
    assert "Annex" in page.text


def test_the_blank_check_can_be_turned_off(tmp_path: Path) -> None:
    page = ocr_page(_scan(tmp_path / "blank.pdf"), 0, dpi=200, blank_below=0)

    assert page.method == "ocr"
    assert page.text == ""


def test_pages_in_parallel_share_one_fork_server_and_report_their_peak_memory(
    tmp_path: Path,
) -> None:
    pdfs = [_scan(tmp_path / f"p{n}.pdf", f"Tender number {n}00") for n in range(1, 5)]

    with ThreadPoolExecutor(max_workers=4) as pool:
        pages = list(pool.map(lambda pdf: ocr_page(pdf, 0, dpi=200), pdfs))

    assert [p.text for p in pages] == [f"Tender number {n}00" for n in range(1, 5)]
    assert len(fork_server.fork_server_pids()) == 1
    # An A4 page at 200 dpi is 3.8 MB of grey pixels: the child's peak holds at least that.
    assert all(p.peak_rss_bytes is not None and p.peak_rss_bytes > 4_000_000 for p in pages)


def test_a_new_environment_gets_a_new_fork_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdf = _scan(tmp_path / "word.pdf", "Annex")
    inspect_pdf(pdf)
    [first] = fork_server.fork_server_pids()

    monkeypatch.setenv("LC_ALL", "C.UTF-8")  # children must see it: their server too
    inspect_pdf(pdf)

    [second] = fork_server.fork_server_pids()
    assert second != first
    wait_for(lambda: not _alive(first), timeout=30, what="the old fork server to exit")


def test_a_killed_fork_server_fails_its_pages_retryably_and_is_replaced(tmp_path: Path) -> None:
    pdf = _scan(tmp_path / "scan.pdf", "\n".join(["Tender for road maintenance"] * 30), dpi=300)
    inspect_pdf(pdf)  # starts the server
    [server] = fork_server.fork_server_pids()

    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(ocr_page, pdf, 0, dpi=300, timeout_s=60)
        children = wait_for(lambda: _descendants(server), timeout=30, what="the OCR child")
        os.kill(server, signal.SIGKILL)
        with pytest.raises(KilledBySignal, match="killed by signal 9, SIGKILL"):
            future.result(timeout=60)

    # The child died with its server (PR_SET_PDEATHSIG), and the next page gets a new one.
    wait_for(lambda: not any(map(_alive, children)), timeout=30, what="the child to die")
    assert inspect_pdf(pdf).page_count == 1
    assert fork_server.fork_server_pids() not in ([], [server])


def test_a_killed_worker_leaves_no_fork_server_and_no_child_running(tmp_path: Path) -> None:
    pdf = _scan(tmp_path / "scan.pdf", "\n".join(["Tender for road maintenance"] * 30), dpi=300)
    worker = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from pg_pipeline_documents.ocr_engine import ocr_page
        print("started", flush=True)
        ocr_page(Path({str(pdf)!r}), 0, dpi=300, timeout_s=60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", worker], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"started\n"

        # The fork server, and under it the page's child (the renderer, then tesseract).
        def server_and_child() -> list[int] | None:
            found = _descendants(proc.pid)
            return found if len(found) >= 2 else None

        tree = wait_for(server_and_child, timeout=30, what="the fork server and its child")
        assert tree is not None
    finally:
        proc.kill()
        proc.wait()

    wait_for(lambda: not any(map(_alive, tree)), timeout=30, what="the server and child to end")


def test_twenty_files_checked_at_once_cost_one_process_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What `pipeline submit` does with 20 files: PDFium opens each in a killable child.
    pdfs = [_scan(tmp_path / f"f{n}.pdf", f"File {n}", dpi=72) for n in range(20)]
    started: list[int] = []
    real_init = fork_server.ForkServer.__init__

    def counting_init(self: fork_server.ForkServer, env: dict[str, str]) -> None:
        real_init(self, env)
        started.append(self.pid)

    def no_spawn(*args: object, **kwargs: object) -> object:
        raise AssertionError("a child was spawned instead of forked")

    monkeypatch.setattr(fork_server.ForkServer, "__init__", counting_init)
    monkeypatch.setattr(runner, "_run_spawned", no_spawn)

    assert [inspect_pdf(pdf).page_count for pdf in pdfs] == [1] * 20
    assert len(started) == 1


def test_a_fork_server_that_stops_answering_is_killed_and_its_page_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hung server (here: stopped) would hold its pipe's lock, and every later page, for good.
    pdf = _scan(tmp_path / "scan.pdf", "Tender for road maintenance", dpi=150)
    inspect_pdf(pdf)  # starts the server
    [server] = fork_server.fork_server_pids()
    monkeypatch.setattr(fork_server, "_SERVER_ANSWER_S", 1.0)
    os.kill(server, signal.SIGSTOP)
    try:
        page = ocr_page(pdf, 0, dpi=150, timeout_s=60)
    finally:
        if _alive(server):
            os.kill(server, signal.SIGCONT)
    assert "road maintenance" in page.text.lower()
    assert not _alive(server), "the stopped server was left running"
    assert server not in fork_server.fork_server_pids()


def test_a_fork_server_that_fails_to_start_is_tried_again_after_a_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A start too slow for a loaded machine once made the process spawn every page for good.
    pdf = _scan(tmp_path / "scan.pdf", "Tender for road maintenance", dpi=72)
    fork_server.stop_fork_servers()
    real_init = fork_server.ForkServer.__init__
    starts: list[str] = []

    def failing_once(self: fork_server.ForkServer, env: dict[str, str]) -> None:
        starts.append("failed" if not starts else "started")
        if len(starts) == 1:
            raise fork_server.ServerGone("the fork server did not answer within 60 s")
        real_init(self, env)

    monkeypatch.setattr(fork_server.ForkServer, "__init__", failing_once)
    monkeypatch.setattr(fork_server, "_START_RETRY_S", 3600.0)
    try:
        assert inspect_pdf(pdf).page_count == 1  # spawned
        assert inspect_pdf(pdf).page_count == 1  # spawned: no start tried during the pause
        assert (starts, fork_server.fork_server_pids()) == (["failed"], [])

        fork_server.SERVERS._start_after = 0.0  # the pause is over
        assert inspect_pdf(pdf).page_count == 1
    finally:
        fork_server.SERVERS._start_after = 0.0  # no pause left for the tests after this one

    assert starts == ["failed", "started"]
    assert len(fork_server.fork_server_pids()) == 1
