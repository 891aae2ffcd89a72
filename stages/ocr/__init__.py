"""The sandbox for PDFium and tesseract: a child process that the parent can always kill.

Parsing and rendering untrusted PDFs happens in C (PDFium), and so does OCR (tesseract); either
can hang, crash or allocate without bound. Everything that touches them runs in a separate Python
process started by :func:`ocr.runner.run_child`, forked from a fork server that has
imported pypdfium2 once (:class:`ocr.fork_server.ForkServer`: a few ms per child instead
of ~130 ms to spawn ``python`` and import it):

* the child puts itself under ``RLIMIT_AS`` (address space) once its imports are done, and under
  ``RLIMIT_CPU`` as a backstop should the parent die (:mod:`ocr.limits`);
* the child gets only the environment variables it needs
  (:func:`ocr.protocol.child_environment`): it parses untrusted input, so the worker's
  secrets (``DATABASE_URL``, API keys, AWS credentials) stay out of its reach;
* for OCR the child renders the page (:mod:`ocr.raster`), hands the pixels to
  libtesseract in its own process (:mod:`ocr.tesseract`, through ctypes; the fork server
  has loaded the language's model once, so each child inherits an engine ready to read), closes
  PDFium's objects, records in its result that tesseract is reading, and reads. Tesseract runs
  under the child's pid, process group and both limits, and there is never a grandchild that a
  kill could orphan (an orphan killed with its group would linger as a zombie under init).
  Where the library cannot be found, the child writes the page to a PGM file and *execs* the
  tesseract command in its own place instead, which keeps the same guarantees and costs
  ~150 ms of CPU more per page;
* the child runs in a session (so a process group) of its own; the parent enforces the
  wall-clock timeout and sends SIGKILL to the whole group, which works however stuck the child
  is in C code, then has it reaped (by the fork server, which reaps only when told to: until
  then the child's pid cannot be reused, and the parent watches it through a pidfd;
  :mod:`ocr.processes`);
* a page whose render holds almost no ink (:func:`ocr.raster.ink_blocks`) is reported
  ``blank`` and never reaches tesseract;
* the parent owns the temporary work directory (request, result, and with the tesseract command
  the rendered image and its output) and removes it once the child is gone, so a killed child
  leaves no files behind.

The modules, by the process they run in:

* the worker: :mod:`~ocr.runner` (one request in one child) and
  :mod:`~ocr.fork_server` (the fork server's client and the pool of them);
* the fork server: :mod:`~ocr.server_loop`;
* the child: :mod:`~ocr.child` (the request's op, its failures, the exec of tesseract),
  :mod:`~ocr.limits`, :mod:`~ocr.pdf_ops` (what the child does to the document),
  :mod:`~ocr.reading_order` (two-column text layers read column by column),
  :mod:`~ocr.text_layer` (a text layer's layout), :mod:`~ocr.raster` (the page in
  grey pixels), :mod:`~ocr.tesseract` and :mod:`~ocr.ocr_words` (the words it
  read, with their boxes);
* either side: :mod:`~ocr.protocol` (the files and environment they share) and
  :mod:`~ocr.processes` (waiting for and killing process groups).

At module level every module here imports only the standard library and its siblings: the
parent imports them for :func:`~ocr.runner.run_child`, the fork server runs
``python -P stages/ocr/sandbox.py --serve`` and only then imports pypdfium2 (where there is no
fork server, each child runs ``python -P stages/ocr/sandbox.py request.json``). Nothing here
imports the rest of ``stages`` at module level: every import before a child's limits is time
and memory spent on each page (a test holds this). The one exception is made inside a function:
a text layer's layout is read by the extractor's own reader, :mod:`layout` (pydantic),
which the fork server imports once for all its children.

Protocol: the parent writes ``request.json`` into the work directory; the child writes
``result.json`` (atomically) holding ``{"ok": true, ...}`` or ``{"ok": false, "kind": ...,
"message": ...}``. ``"method": "ocr"`` carries the text and mean word confidence tesseract read
in the child; ``"method": "blank"`` means it found no ink to read. A result with ``"stage":
"tesseract"`` and no method means the page was rendered and tesseract was reading it when the
process ended, or the process became the tesseract command: its exit status and output files
(``ocr.txt``, ``ocr.tsv``) are tesseract's. A child that leaves no result died (by a signal or
an exit status) and the parent draws its own conclusion. Kinds of failure:

``load``        the document cannot be opened; ``reason`` is ``password``, ``security``,
                ``no_pages`` or ``damaged``
``pdfium``      PDFium failed on the page (loading, text extraction, rendering)
``document``    some other property of the input makes the page unusable
``memory``      an allocation failed under the memory limit
``page_range``  the page index is outside the document (``page_count`` says how many pages)
``tesseract``   tesseract (in the child's process) could not recognise the page
``setup``       the environment is broken (pypdfium2 not importable, no tesseract, no language
                data)
``internal``    an unexpected exception: a bug, not the document's fault
"""
