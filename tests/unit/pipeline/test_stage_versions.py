"""A stage's code version (StageSpec.code_version): declared with @stage(version=...), else a
fingerprint of its function's code that every process running the same code agrees on and that
an edit of the function's body changes."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel

from pg_pipeline import Context
from pg_pipeline.stage import Registry, code_fingerprint, stage

MODULE = """
from pydantic import BaseModel

from pg_pipeline import Context


class Doc(BaseModel):
    text: str


PROMPT = "unused"


def extract(job: Doc, ctx: Context) -> Doc:
    words = {{"a", "b", "c", "d"}}  # a set constant: its order differs between processes
    kept = [w for w in job.text.split() if w not in words]
    return Doc(text={body!r} + " ".join(kept))
"""


def write_module(tmp_path: Path, name: str, body: str, *, pad: int = 0) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text("\n" * pad + textwrap.dedent(MODULE.format(body=body)))
    return path


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fingerprint_in_child(path: Path, hash_seed: str) -> str:
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('m', {str(path)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "from pg_pipeline.stage import code_fingerprint\n"
        "print(code_fingerprint(m.extract))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_the_default_version_is_the_same_in_every_process_for_the_same_code(
    tmp_path: Path,
) -> None:
    path = write_module(tmp_path, "same", "v: ")
    here = code_fingerprint(load(path).extract)
    assert here.startswith("code-") and len(here) == len("code-") + 12
    assert {fingerprint_in_child(path, seed) for seed in ("1", "2", "3")} == {here}


def test_the_default_version_changes_with_the_body_and_not_with_the_place(
    tmp_path: Path,
) -> None:
    first = code_fingerprint(load(write_module(tmp_path, "first", "v: ")).extract)
    edited = code_fingerprint(load(write_module(tmp_path, "edited", "v2: ")).extract)
    moved = code_fingerprint(load(write_module(tmp_path, "moved", "v: ", pad=7)).extract)
    assert edited != first
    assert moved == first


class Job(BaseModel):
    n: int


def test_a_declared_version_is_the_code_version_and_the_input_version_is_apart() -> None:
    reg = Registry()

    @stage("declared", version="2", registry=reg)
    def declared(job: Job, ctx: Context) -> None:
        return None

    @stage("fingerprinted", registry=reg)
    def fingerprinted(job: Job, ctx: Context) -> None:
        return None

    assert reg.get("declared").code_version == "2"
    assert reg.get("fingerprinted").code_version == code_fingerprint(fingerprinted)
    # The input model's fingerprint (rolling deploys) does not depend on the code version.
    assert reg.get("declared").version == reg.get("fingerprinted").version


@pytest.mark.parametrize("bad", ["", " 2", "x" * 65, "two\nlines", 2])
def test_a_declared_version_must_be_a_short_printable_string(bad: object) -> None:
    with pytest.raises(ValueError, match="stage 'bad': version must be"):
        stage("bad", version=bad, registry=Registry())(_noop)  # type: ignore[arg-type]


def _noop(job: Job, ctx: Context) -> None:
    return None
