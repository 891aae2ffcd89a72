"""A failed job's retry delays: exponential in the attempt number, jittered, capped. (Waiting
out a database outage is pipeline/reconnecting.py's.)"""

from __future__ import annotations

import random

BACKOFF_BASE_S = 10.0  #: delay before the second attempt, before jitter
BACKOFF_CAP_S = 1800.0  #: no retry waits longer than 30 minutes


def retry_delay(
    attempt: int,
    *,
    base_s: float = BACKOFF_BASE_S,
    cap_s: float = BACKOFF_CAP_S,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait after failed attempt `attempt` (1-based).

    The jitter factor is uniform in [0.5, 1.5), so failures that happened together spread out
    instead of retrying in the same second; the cap applies after jitter.
    """
    if attempt < 1:
        raise ValueError("attempt is 1-based")
    draw = (rng or random).random()
    exponent = min(attempt - 1, 32)  # 2**32 * base is far past any cap; avoids float overflow
    return min(cap_s, base_s * (2.0**exponent) * (0.5 + draw))
