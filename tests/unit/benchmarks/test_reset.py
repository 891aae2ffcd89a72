"""The benchmarks empty their tables through the one reset (benchmarks/reset.py), never a
list of their own that a new table a drain writes would miss."""

from __future__ import annotations

import re
from pathlib import Path

import benchmarks

#: a TRUNCATE up to the end of the call it is in, string literals split over lines included
TRUNCATE = re.compile(r"TRUNCATE[^)]*", re.DOTALL)


def test_no_benchmark_keeps_its_own_list_of_the_tables_a_drain_writes() -> None:
    root = Path(benchmarks.__file__).parent
    own = {
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "reset.py"
        for statement in TRUNCATE.findall(path.read_text())
        if "pipeline.job_history" in statement
    }
    assert own == set()
