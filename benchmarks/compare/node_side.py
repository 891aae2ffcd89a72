"""A library driven by a Node.js script of benchmarks/compare/node (the benchmark's Node.js 22)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.compare.nodejs import MODULES, SOURCE
from benchmarks.compare.sides import ChildSide


class NodeSide(ChildSide):
    """Its script answers the same commands, with the same JSON lines, as the Python children.

    Workers are `node <script> worker …` processes, measured like the Python sides' (their
    /proc trees); enqueues are the script's other commands, each through the library's own API.
    """

    node: Path
    script: str  # a file of benchmarks/compare/node

    def command(self, *args: str) -> list[str]:
        return [str(self.node), str(SOURCE / self.script), *args]

    def child_env(self, url: str, extra: dict[str, str] | None = None) -> dict[str, str]:
        return super().child_env(url, {"BENCH_NODE_MODULES": str(MODULES), **(extra or {})})
