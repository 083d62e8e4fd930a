"""Deadlines on waits a server may never end: one thread per process runs an action when a guarded
call overruns (cancel a commit still waiting for a synchronous standby, shut the socket of a replica
that stopped answering), so no request starts a thread of its own and no wait depends on the
server answering."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


@dataclass(eq=False)
class Deadline:
    at: float  # time.monotonic()
    action: Callable[[], object]
    fired: bool = False
    # Held while the action runs and while the guarded call ends: an action never reaches past it.
    lock: threading.Lock = field(default_factory=threading.Lock)
    finished: bool = False


class Watchdog:
    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._pending: set[Deadline] = set()
        self._thread: threading.Thread | None = None
        # When the thread next looks at the deadlines: a new one due later needs no wake-up. Waking
        # it for every guarded call (each write's commit) made the caller hand the GIL over and wait
        # to get it back, a switch per request for a thread with nothing to do.
        self._looks_at = math.inf

    @contextlib.contextmanager
    def after(self, seconds: float, action: Callable[[], object]) -> Iterator[Deadline]:
        """Within: if the block is still running ``seconds`` from now, ``action()`` runs (from the
        watchdog's thread; its errors are ignored) and the deadline's ``fired`` is set."""
        deadline = Deadline(at=time.monotonic() + seconds, action=action)
        with self._wake:
            self._pending.add(deadline)
            if self._thread is None or not self._thread.is_alive():  # none yet, or a fork's parent had it
                self._thread = threading.Thread(target=self._watch, name="agentstate-watchdog", daemon=True)
                self._thread.start()
            if deadline.at < self._looks_at:
                self._wake.notify()
        try:
            yield deadline
        finally:
            with self._wake:
                self._pending.discard(deadline)
            with deadline.lock:
                deadline.finished = True

    def _watch(self) -> None:
        while True:
            with self._wake:
                now = time.monotonic()
                due = [deadline for deadline in self._pending if deadline.at <= now]
                self._pending.difference_update(due)
                if not due:
                    self._looks_at = min((deadline.at for deadline in self._pending), default=now + 60)
                    self._wake.wait(self._looks_at - now)
                    continue
                self._looks_at = now  # the deadlines are looked at again once these actions ran
            for deadline in due:
                with deadline.lock:
                    if deadline.finished:
                        continue
                    deadline.fired = True
                    with contextlib.suppress(Exception):  # the connection may be gone: nothing to stop
                        deadline.action()


watchdog = Watchdog()
