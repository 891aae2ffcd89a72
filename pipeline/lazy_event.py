"""LazyEvent: a threading.Event that costs nothing until a thread waits on it."""

from __future__ import annotations

import threading


class LazyEvent:
    """Every claimed job gets one (its `lost_lease`), nearly none is ever waited on, and a
    threading.Event (a Condition and its lock) was a fifth of a no-op job's cost to the worker.
    The Event is made on the first wait; is_set and set stay a flag until then."""

    __slots__ = ("_event", "_set")

    #: Guards the making of the Event only; a flag is made and read without it.
    _making = threading.Lock()

    def __init__(self) -> None:
        self._set = False
        self._event: threading.Event | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        # The flag goes up before the Event is looked at, and wait() looks at the flag after
        # it installs the Event, so one of the two always sets the Event.
        self._set = True
        event = self._event
        if event is not None:
            event.set()

    def wait(self, timeout: float | None = None) -> bool:
        if self._set:
            return True
        with LazyEvent._making:
            if self._event is None:
                self._event = threading.Event()
                if self._set:
                    self._event.set()
            event = self._event
        return event.wait(timeout)
