"""The program a sandboxed child and the fork server run: ``python -P sandbox.py request.json``
or ``python -P sandbox.py --serve`` (see :mod:`ocr`).

``-P`` keeps this file's directory off ``sys.path``; the directory that holds ``stages`` goes
first instead, so the child runs the very modules its parent imported, installed or not.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from pg_pipeline_documents.ocr.protocol import SERVE_FLAG

    if sys.argv[1:] == [SERVE_FLAG]:
        from pg_pipeline_documents.ocr.server_loop import serve

        sys.exit(serve())
    from pg_pipeline_documents.ocr.child import child_main
    from pg_pipeline_documents.ocr.tesseract import close_tesseracts

    status = child_main(sys.argv[1])
    close_tesseracts()
    sys.exit(status)
