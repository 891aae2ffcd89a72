"""Worker settings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pg_pipeline.settings import WorkerSettings


def test_worker_settings_reject_unknown_keys() -> None:
    with pytest.raises(ValidationError, match="concurency"):
        WorkerSettings(concurency=4)  # type: ignore[call-arg]
