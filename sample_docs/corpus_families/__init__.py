"""The builders of the extraction corpus's notices, a module per family, and what they share.

Each family module (``ted``, ``eforms``, ``uk``, ``us``, ``de``, ``fr``) holds its buyers and
titles, ``build`` (the family's own layout and wording, in seeded variants) and ``build_unseen``
(its one notice in other wording). The shared parts: ``layout`` (``Doc``: lines, label/value
pairs, tables and columns on A4 pages), ``values`` (``Spec``, a notice's true values, and how
amounts and dates are printed), and, for the worded splits, ``formats`` (date and amount formats
by name) and ``varied`` (any family's notice in the wording of one pool of corpus_wording.py).
``make_corpus.py`` decides which notices are made, with which seeds, and writes them; it puts
sample_docs/ (for make_samples and corpus_wording) and the repository root on sys.path first.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from . import de, eforms, fr, ted, uk, us
from .layout import Doc
from .values import Spec

#: Each family's builder of its seeded variants.
BUILDERS: dict[str, Callable[[random.Random, int], tuple[Spec, Doc]]] = {
    "ted": ted.build,
    "eforms": eforms.build,
    "uk": uk.build,
    "us": us.build,
    "de": de.build,
    "fr": fr.build,
}
#: Each family's notice in other wording (the ``unseen`` split).
UNSEEN: dict[str, Callable[[random.Random], tuple[Spec, Doc]]] = {
    "ted": ted.build_unseen,
    "eforms": eforms.build_unseen,
    "uk": uk.build_unseen,
    "us": us.build_unseen,
    "de": de.build_unseen,
    "fr": fr.build_unseen,
}
