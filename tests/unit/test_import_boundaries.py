"""The boundaries between the framework and the documents app, and inside the framework, read
from the source.

`pipeline/` (imported as `pg_pipeline`) never imports `stages/` (`pg_pipeline_documents`);
`stages/` uses only what `pipeline/__init__.py` exports and the command plug-ins' surface,
`pg_pipeline.commands.api`; no module of `pipeline/` imports itself back through others, not even
inside a function. Every module under both folders is parsed, so a file added later is held to
the same rules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

import pg_pipeline
from pg_pipeline.commands import api
from tests.support.paths import REPO

ROOT = REPO
#: Each folder's import name (pyproject.toml's [tool.setuptools.package-dir]).
IMPORT_NAMES = {"pipeline": "pg_pipeline", "stages": "pg_pipeline_documents"}
#: Each folder's import name (pyproject.toml's [tool.setuptools.package-dir]).
IMPORT_NAMES = {"pipeline": "pg_pipeline", "stages": "pg_pipeline_documents"}


def _modules(root: Path, package: str) -> list[Path]:
    files = sorted((root / package).rglob("*.py"))
    assert files, f"no modules found under {root / package}"
    return files


def _imports(
    root: Path, path: Path, *, runtime: bool = False
) -> Iterator[tuple[str, str, list[str] | None]]:
    """(file:line, absolute module, names) of every import in the file, nested ones included;
    with `runtime`, only those that run (not those under `if TYPE_CHECKING:`).

    ``names`` is None for ``import x``; a relative import is resolved against the file's package.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    folder, *below = path.relative_to(root).parent.parts
    package = (IMPORT_NAMES[folder], *below)
    for node in _runtime_imports(tree) if runtime else ast.walk(tree):
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
        if _is_under(module, "pg_pipeline_documents")
    ]


#: What stages/ may import from: the package, and the plug-in surface for commands.
PUBLIC_MODULES = ("pg_pipeline", "pg_pipeline.commands.api")


def stages_offences(root: Path, exported: dict[str, set[str]]) -> list[str]:
    """`exported`: each public module's exported names."""
    offences = []
    for path in _modules(root, "stages"):
        for where, module, names in _imports(root, path):
            if not _is_under(module, "pg_pipeline"):
                continue
            if module not in exported:
                offences.append(f"{where} imports the submodule {module}")
            elif names is not None and set(names) - exported[module]:
                # `from pg_pipeline import paths` reaches a submodule all the same.
                unexported = sorted(set(names) - exported[module])
                offences.append(f"{where} imports unexported {unexported}")
    return offences


def _runtime_imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import that runs, however deeply nested (in a function, a try), but none under
    `if TYPE_CHECKING:`, which never runs."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
        return
    children: Iterable[ast.AST] = ast.iter_child_nodes(node)
    if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
        children = node.orelse
    for child in children:
        yield from _runtime_imports(child)


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module name to the modules of `package` it imports, function-level imports included.
    `from a import b` counts as importing the module a.b when there is one, else a."""
    files = {}
    for path in _modules(root, package):
        folder, *below = path.relative_to(root).with_suffix("").parts
        parts = (IMPORT_NAMES[folder], *below)
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets: set[str] = set()
        for _where, module, names in _imports(root, path, runtime=True):
            for imported in names or [None]:
                submodule = f"{module}.{imported}"
                targets.update([submodule] if submodule in files else [module])
        graph[name] = (targets & set(files)) - {name}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or around a circle, sorted:
    the strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = [stack.pop()]
            while group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(circles)


def test_pipeline_never_imports_the_stages() -> None:
    assert pipeline_offences(ROOT) == []


def test_stages_import_only_what_the_public_modules_export() -> None:
    exported = {
        "pg_pipeline": set(pg_pipeline.__all__),
        "pg_pipeline.commands.api": set(api.__all__),
    }
    assert set(exported) == set(PUBLIC_MODULES)
    assert stages_offences(ROOT, exported) == []


@pytest.mark.parametrize(
    ("module", "name"),
    [(pg_pipeline, name) for name in pg_pipeline.__all__] + [(api, name) for name in api.__all__],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_every_exported_name_resolves(module: object, name: str) -> None:
    assert getattr(module, name) is not None


def test_no_pipeline_module_imports_itself_back_through_others() -> None:
    assert import_circles(import_graph(ROOT, "pipeline")) == []


def test_the_checks_find_every_kind_of_crossing(tmp_path: Path) -> None:
    (tmp_path / "pipeline" / "worker").mkdir(parents=True)
    (tmp_path / "pipeline" / "worker" / "new.py").write_text(
        "from . import inflight\n"
        "def f() -> None:\n"
        "    from pg_pipeline_documents.errors import DocumentError\n"
    )
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "new.py").write_text(
        "import pg_pipeline\n"
        "from pg_pipeline import Context, paths\n"
        "from pg_pipeline.paths import data_dir\n"
        "from . import errors\n"
        "from pg_pipeline.commands.api import CliError, load_db\n"
        "import pg_pipeline.commands.api\n"
        "def f() -> None:\n"
        "    import pg_pipeline.cli\n"
    )

    assert pipeline_offences(tmp_path) == [
        "pipeline/worker/new.py:3 imports pg_pipeline_documents.errors"
    ]
    exported = {"pg_pipeline": {"Context"}, "pg_pipeline.commands.api": {"CliError"}}
    assert stages_offences(tmp_path, exported) == [
        "stages/new.py:2 imports unexported ['paths']",
        "stages/new.py:3 imports the submodule pg_pipeline.paths",
        "stages/new.py:5 imports unexported ['load_db']",
        "stages/new.py:8 imports the submodule pg_pipeline.cli",
    ]


def test_an_import_circle_is_found_through_a_function_and_a_relative_import(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pipeline"
    (package / "commands").mkdir(parents=True)
    for name in ("__init__.py", "commands/__init__.py", "db.py"):
        (package / name).write_text("")
    (package / "cli.py").write_text("from pg_pipeline.commands import jobs\nfrom . import db\n")
    (package / "commands" / "jobs.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pg_pipeline.db import Connection\n"
        "def run() -> None:\n"
        "    from ..cli import load_apps\n"
    )
    (package / "commands" / "status.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pg_pipeline.cli\n"
    )

    graph = import_graph(tmp_path, "pipeline")
    assert graph["pg_pipeline.commands.jobs"] == {"pg_pipeline.cli"}
    assert graph["pg_pipeline.commands.status"] == set()  # never runs
    assert import_circles(graph) == [["pg_pipeline.cli", "pg_pipeline.commands.jobs"]]


def test_the_package_exports_lazily_what_its_type_checked_imports_name() -> None:
    """pipeline/__init__.py imports each export on first use: its table of them (`_EXPORTS`)
    must name what the imports mypy reads name, and __all__ the same names."""
    tree = ast.parse((ROOT / "pipeline" / "__init__.py").read_text(encoding="utf-8"))
    [checked] = [
        n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n)
    ]
    imported = {
        (node.module or "").removeprefix("pg_pipeline").lstrip("."): tuple(
            alias.name for alias in node.names
        )
        for node in checked.body
        if isinstance(node, ast.ImportFrom)
    }
    # `from pg_pipeline import inputs`: a submodule, found by __getattr__ without the table.
    assert imported.pop("") == ("inputs",)
    assert imported == pg_pipeline._EXPORTS
    assert sorted(pg_pipeline.__all__) == sorted([*pg_pipeline._MODULE_OF, "inputs"])
