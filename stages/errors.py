"""Errors raised by the document stages.

They live here, not in ``pipeline``, so that the stages stay importable on their own. The queue
decides what to do with a failed job from the class of the error:

* :class:`DocumentError` is permanent: the input itself is bad (not a PDF, encrypted, damaged, a
  page that crashes the renderer). Retrying the same bytes cannot help; the message is meant for
  a human and says what is wrong.
* :class:`OcrTimeout` is transient: the work did not finish in time, which may be load on the
  machine as much as the page. A retry may succeed.
"""

from __future__ import annotations


class DocumentError(Exception):
    """Permanent failure caused by the input document; retrying cannot help."""


class OcrTimeout(Exception):
    """Transient failure: the work ran past its wall-clock limit and was killed; retry may help."""
