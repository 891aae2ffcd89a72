"""The two boundaries between the framework and the documents app, read from the source.

`pipeline/` never imports `stages/`; `stages/` uses only what `pipeline/__init__.py` exports.
Every module under both folders is parsed, so a file added later is held to the same rules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import pipeline

ROOT = Path(__file__).resolve().parents[2]


def _modules(root: Path, package: str) -> list[Path]:
    files = sorted((root / package).rglob("*.py"))
    assert files, f"no modules found under {root / package}"
    return files


def _imports(root: Path, path: Path) -> Iterator[tuple[str, str, list[str] | None]]:
    """(file:line, absolute module, names) of every import in the file, nested ones included.

    ``names`` is None for ``import x``; a relative import is resolved against the file's package.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = path.relative_to(root).parent.parts
    for node in ast.walk(tree):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield where, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([module] if module else [])])
            yield where, module, [alias.name for alias in node.names]


def _is_under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def pipeline_offences(root: Path) -> list[str]:
    return [
        f"{where} imports {module}"
        for path in _modules(root, "pipeline")
        for where, module, _names in _imports(root, path)
        if _is_under(module, "stages")
    ]


def stages_offences(root: Path, exported: set[str]) -> list[str]:
    offences = []
    for path in _modules(root, "stages"):
        for where, module, names in _imports(root, path):
            if not _is_under(module, "pipeline"):
                continue
            if module != "pipeline":
                offences.append(f"{where} imports the submodule {module}")
            elif names is not None and set(names) - exported:
                # `from pipeline import paths` reaches a submodule all the same.
                offences.append(f"{where} imports unexported {sorted(set(names) - exported)}")
    return offences


def test_pipeline_never_imports_the_stages() -> None:
    assert pipeline_offences(ROOT) == []


def test_stages_import_only_what_the_pipeline_package_exports() -> None:
    assert stages_offences(ROOT, set(pipeline.__all__)) == []


@pytest.mark.parametrize("name", pipeline.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    # The CLI's names are imported lazily (see pipeline/__init__.py): a misspelt one would only
    # show when a plug-in first asks for it.
    assert getattr(pipeline, name) is not None


def test_the_checks_find_every_kind_of_crossing(tmp_path: Path) -> None:
    (tmp_path / "pipeline" / "worker").mkdir(parents=True)
    (tmp_path / "pipeline" / "worker" / "new.py").write_text(
        "from . import inflight\ndef f() -> None:\n    from stages.errors import DocumentError\n"
    )
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "new.py").write_text(
        "import pipeline\n"
        "from pipeline import Context, paths\n"
        "from pipeline.paths import data_dir\n"
        "from . import errors\n"
        "def f() -> None:\n"
        "    import pipeline.cli\n"
    )

    assert pipeline_offences(tmp_path) == ["pipeline/worker/new.py:3 imports stages.errors"]
    assert stages_offences(tmp_path, {"Context"}) == [
        "stages/new.py:2 imports unexported ['paths']",
        "stages/new.py:3 imports the submodule pipeline.paths",
        "stages/new.py:6 imports the submodule pipeline.cli",
    ]
