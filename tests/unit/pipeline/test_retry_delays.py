"""A failed job's retry delays: exponential, jittered, capped."""

from __future__ import annotations

import random

import pytest

from pg_pipeline.retry_delays import retry_delay


def test_backoff_grows_exponentially_and_is_jittered_and_capped() -> None:
    rng = random.Random(42)
    delays = {
        a: [retry_delay(a, base_s=10, cap_s=1800, rng=rng) for _ in range(200)]
        for a in (1, 2, 3, 4)
    }
    for attempt, samples in delays.items():
        low, high = 10 * 2 ** (attempt - 1) * 0.5, 10 * 2 ** (attempt - 1) * 1.5
        assert all(low <= d < high for d in samples)
        assert len({round(d, 6) for d in samples}) > 150, "no jitter"
    medians = [sorted(s)[100] for s in delays.values()]
    assert medians == sorted(medians) and medians[-1] > 6 * medians[0]
    assert retry_delay(40, base_s=10, cap_s=1800, rng=rng) == 1800
    with pytest.raises(ValueError):
        retry_delay(0)
