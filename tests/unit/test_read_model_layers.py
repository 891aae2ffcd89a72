"""Where the operators' reads live, read from the source: every surface (the CLI's `status` and
`jobs`, the dashboard, the worker's /metrics) reads through pipeline/admin/, and the runtime
reaches the operator side for nothing but the queue gauges its /metrics serves."""

from __future__ import annotations

import ast

from tests.support.paths import REPO

PIPELINE = REPO / "pipeline"


def imported(folder: str) -> dict[str, set[str]]:
    """Module file (relative to pipeline/) to the absolute modules it imports, nested ones too."""
    found: dict[str, set[str]] = {}
    for path in sorted((PIPELINE / folder).rglob("*.py")):
        modules: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module)
                modules.update(f"{node.module}.{alias.name}" for alias in node.names)
        found[str(path.relative_to(PIPELINE))] = modules
    assert found, f"no modules under pipeline/{folder}"
    return found


def under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_runtime_reaches_the_operator_side_only_for_the_queue_gauges() -> None:
    operator = (
        "pg_pipeline.cli",
        "pg_pipeline.commands",
        "pg_pipeline.dashboard",
        "pg_pipeline.admin",
    )
    allowed = {"pg_pipeline.admin", "pg_pipeline.admin.metrics"}  # the collector /metrics registers
    offences = [
        f"{path} imports {module}"
        for folder in ("worker", "maintenance")
        for path, modules in imported(folder).items()
        for module in modules
        if any(under(module, p) for p in operator)
        and not (module in allowed or module.startswith("pg_pipeline.admin.metrics."))
    ]
    assert offences == []


def test_the_dashboard_and_the_clis_reads_run_no_query_of_their_own() -> None:
    # A read they need is a function of pipeline/admin/, scoped by tenant like the others, so
    # that the CLI, the dashboard and /metrics cannot drift apart.
    readers = {
        **imported("dashboard"),
        **{
            path: modules
            for path, modules in imported("commands").items()
            if path in ("commands/status.py", "commands/jobs.py")
        },
    }
    assert "commands/status.py" in readers and "dashboard/web.py" in readers
    offences = [
        f"{path} imports {module}"
        for path, modules in readers.items()
        for module in modules
        if under(module, "pg_pipeline.queries") or module == "pipeline.Q"
    ]
    assert offences == []
