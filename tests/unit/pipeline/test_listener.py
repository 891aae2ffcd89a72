"""The listener's handling of notifications, without a database: what it passes on and when."""

from __future__ import annotations

import threading

from pg_pipeline.listener import CANCEL_CHECK_INTERVAL_S, Listener
from tests.support.waiting import wait_for


class Heard:
    def __init__(self) -> None:
        self.ready: list[str] = []
        self.cancels: list[list[tuple[int, int]]] = []

    def listener(self) -> Listener:
        return Listener(
            "postgresql://unused",
            on_ready=self.ready.append,
            on_cancel=self.cancels.append,
            stop=threading.Event(),
            retry_max_s=1.0,
        )


def test_announcements_that_arrive_together_wake_once_per_job_type() -> None:
    heard = Heard()
    heard.listener().handle_batch(
        [("pipeline_jobs", "ocr"), ("pipeline_jobs", "ocr"), ("pipeline_jobs", "extract")] * 50
    )
    assert heard.ready == ["ocr", "extract"]


def test_an_empty_announcement_is_dropped_as_it_would_say_claim_now_for_any_type() -> None:
    heard = Heard()
    heard.listener().handle_batch([("pipeline_jobs", ""), ("pipeline_jobs", "ocr")])
    assert heard.ready == ["ocr"]


def test_cancels_that_arrive_together_are_checked_in_one_call_at_most_once_an_interval() -> None:
    heard = Heard()
    listener = heard.listener()
    listener.handle_batch([("pipeline_cancel", "7:1"), ("pipeline_cancel", "8:2")] * 3)
    assert heard.cancels == [[(7, 1), (8, 2)]]
    listener.handle_batch([("pipeline_cancel", "9:1")])
    assert heard.cancels == [[(7, 1), (8, 2)]], "checked again within the interval"

    def checked_again() -> bool:
        listener.handle_batch([])  # what the listen loop does when its wait times out
        return len(heard.cancels) == 2

    wait_for(checked_again, timeout=10 + CANCEL_CHECK_INTERVAL_S, what="the held hint's check")
    assert heard.cancels[1] == [(9, 1)]


def test_a_malformed_cancel_is_dropped_and_the_rest_of_its_batch_is_handled() -> None:
    heard = Heard()
    heard.listener().handle_batch(
        [("pipeline_cancel", "1:2:3"), ("pipeline_cancel", "x" * 500), ("pipeline_cancel", "4:5")]
    )
    assert heard.cancels == [[(4, 5)]]
