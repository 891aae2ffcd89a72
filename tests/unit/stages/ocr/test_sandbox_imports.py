"""The OCR sandbox's modules run in the child before its limits: they stay light."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pg_pipeline_documents.ocr

PACKAGE = Path(pg_pipeline_documents.ocr.__file__).parent


def _module_level_imports(path: Path) -> list[str]:
    """What a module imports when it is imported (not inside its functions)."""
    names: list[str] = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_sandbox_modules_import_only_the_standard_library_and_each_other() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) > 5  # the package was found
    outside = {
        f"{path.name}: {name}"
        for path in modules
        for name in _module_level_imports(path)
        if name != "__future__"
        and name.split(".")[0] not in sys.stdlib_module_names
        and not (name + ".").startswith("pg_pipeline_documents.ocr.")
    }
    assert outside == set()
