"""libtesseract in the child's own process, through its C API (ctypes).

The fork server loads the library and a language's model once (:func:`prepare`), so that every
child forked after inherits an engine ready to read.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pg_pipeline_documents.ocr.ocr_words import OcrWord
from pg_pipeline_documents.ocr.protocol import SetupError
from pg_pipeline_documents.ocr.raster import Grey

_PSM_AUTO = 3  # TessPageSegMode PSM_AUTO: the tesseract command's default
_RIL_TEXTLINE = 2  # TessPageIteratorLevel RIL_TEXTLINE
_RIL_WORD = 3  # TessPageIteratorLevel RIL_WORD


class Tesseract:
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
            raise SetupError(f"cannot load {library}: {exc}") from exc
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
            ("TessResultIteratorGetPageIterator", handle, [handle]),
            ("TessPageIteratorIsAtBeginningOf", c_int, [handle, c_int]),
            ("TessPageIteratorBoundingBox", c_int, [handle, c_int, *[ctypes.c_void_p] * 4]),
            ("TessPageIteratorBaseline", c_int, [handle, c_int, *[ctypes.c_void_p] * 4]),
            ("TessDeleteText", None, [text]),
            ("TessBaseAPIEnd", None, [handle]),
            ("TessBaseAPIDelete", None, [handle]),
        ):
            function = getattr(lib, name)
            function.restype, function.argtypes = restype, argtypes
        self._lib = lib
        self._engines: dict[str, int] = {}
        self._made_by: dict[str, int] = {}  # language -> pid of the process that made it

    def engine(self, lang: str) -> Engine:
        """The engine for ``lang``, initialised on first use (:class:`SetupError` if not)."""
        api = self._engines.get(lang)
        if api is None:
            api = self._lib.TessBaseAPICreate()
            if not api or self._lib.TessBaseAPIInit3(api, None, lang.encode()) != 0:
                if api:
                    self._lib.TessBaseAPIDelete(api)
                raise SetupError(
                    f"could not initialize tesseract for language {lang!r} (is its data installed?)"
                )
            self._lib.TessBaseAPISetPageSegMode(api, _PSM_AUTO)
            self._engines[lang], self._made_by[lang] = api, os.getpid()
        return Engine(self, api)

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
class Engine:
    tesseract: Tesseract
    api: int

    def set_image(self, grey: Grey) -> None:
        """Hand tesseract the page's pixels (it copies them: ``grey`` may be closed after)."""
        ctypes = self.tesseract._ctypes
        address = ctypes.addressof((ctypes.c_char * 1).from_buffer(grey.buffer))
        self.tesseract._lib.TessBaseAPISetImage(
            self.api, address, grey.width, grey.height, 1, grey.stride
        )

    def recognize(self, *, with_words: bool = False) -> Read | None:
        """The page's text as the tesseract command's ``txt`` output has it, the mean word
        confidence as its ``tsv`` output would give it, and with ``with_words`` each word's box
        and line; None when recognition fails."""
        t, lib, ctypes = self.tesseract, self.tesseract._lib, self.tesseract._ctypes
        if lib.TessBaseAPIRecognize(self.api, None) != 0:
            return None
        text = t._take_text(lib.TessBaseAPIGetUTF8Text(self.api))
        confidences = []
        boxes: list[OcrWord] = []
        box = [ctypes.c_int() for _ in range(4)]
        box_refs = [ctypes.addressof(side) for side in box]
        line, ascent = -1, None
        words = lib.TessBaseAPIGetIterator(self.api)
        if words:
            place = lib.TessResultIteratorGetPageIterator(words)
            try:
                while True:
                    if with_words and lib.TessPageIteratorIsAtBeginningOf(place, _RIL_TEXTLINE):
                        line, ascent = line + 1, self._ascent(place, box, box_refs)
                    word = t._take_text(lib.TessResultIteratorGetUTF8Text(words, _RIL_WORD))
                    if word.strip():
                        confidence = lib.TessResultIteratorConfidence(words, _RIL_WORD)
                        if confidence >= 0:
                            confidences.append(float(confidence))
                        if with_words and lib.TessPageIteratorBoundingBox(
                            place, _RIL_WORD, *box_refs
                        ):
                            left, top, right, bottom = (side.value for side in box)
                            boxes.append(OcrWord(line, word, left, top, right, bottom, ascent))
                    if not lib.TessResultIteratorNext(words, _RIL_WORD):
                        break
            finally:
                lib.TessResultIteratorDelete(words)
        mean = sum(confidences) / len(confidences) if confidences else None
        return Read(text, mean, boxes)

    def _ascent(self, place: int, box: list[Any], refs: list[int]) -> float | None:
        """How far the line's top stands above its baseline (at its middle), in pixels."""
        lib = self.tesseract._lib
        if not lib.TessPageIteratorBoundingBox(place, _RIL_TEXTLINE, *refs):
            return None
        top = box[1].value
        if not lib.TessPageIteratorBaseline(place, _RIL_TEXTLINE, *refs):
            return None
        _, y1, _, y2 = (side.value for side in box)
        return float((y1 + y2) / 2 - top)


@dataclass(frozen=True)
class Read:
    """What tesseract read on a page."""

    text: str
    confidence: float | None
    words: list[OcrWord]


_TESSERACTS: dict[str, Tesseract] = {}


def load_tesseract(library: str) -> Tesseract:
    """The loaded library (once per process; a forked child inherits its parent's)."""
    loaded = _TESSERACTS.get(library)
    if loaded is None:
        loaded = _TESSERACTS[library] = Tesseract(library)
    return loaded


def close_tesseracts() -> None:
    for loaded in _TESSERACTS.values():
        loaded.close()


def prepare(request_path: str) -> None:
    """In the fork server, before a page's fork: have its language's engine ready to inherit.
    Any failure is left for the child, which tries again and reports it."""
    with contextlib.suppress(Exception):
        request = json.loads(Path(request_path).read_text(encoding="utf-8"))
        library = request.get("tesseract_library")
        if request.get("op") == "page" and library:
            load_tesseract(str(library)).engine(str(request["lang"]))
