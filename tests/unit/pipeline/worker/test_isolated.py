"""Which jobs the worker runs alone in a child process, checked without starting one."""

from __future__ import annotations

import pytest

from pg_pipeline import Context
from pg_pipeline.stage import Registry, stage
from pg_pipeline.worker.isolated import IsolatedRunner
from tests.unit.pipeline.worker.jobs import In


def test_a_worker_refuses_a_stage_that_must_run_alone_where_no_child_process_can_import_it() -> (
    None
):
    local = Registry()

    @stage("alone_here", isolation="process", registry=local)
    def alone_here(job: In, ctx: Context) -> None:
        return None

    with pytest.raises(ValueError, match="'alone_here' has isolation='process'"):
        IsolatedRunner("postgresql:///unused", {"alone_here": local.get("alone_here")})
