"""The process's watchdog: the one thread that ends waits a server may never end (a commit waiting
for a standby, a replica that stopped answering)."""

import threading
import time

from agentstate.watchdog import watchdog


def test_an_overrunning_call_has_its_action_run_once_and_a_finished_one_never():
    ran: list[str] = []
    with watchdog.after(0.05, lambda: ran.append("late")) as overran:
        time.sleep(0.4)
    with watchdog.after(0.05, lambda: ran.append("early")) as finished:
        pass
    time.sleep(0.3)
    assert ran == ["late"] and overran.fired and not finished.fired


def test_deadlines_share_one_thread_whatever_their_number():
    with watchdog.after(5, lambda: None):
        before = threading.active_count()
    for _ in range(50):
        with watchdog.after(5, lambda: None):
            pass
    assert threading.active_count() == before


def test_a_deadline_sooner_than_those_pending_still_fires_on_time():
    ran: list[str] = []
    with watchdog.after(5, lambda: ran.append("long")):
        time.sleep(0.05)  # the thread now sleeps until the long deadline
        with watchdog.after(0.05, lambda: ran.append("short")) as short:
            time.sleep(0.4)
    assert ran == ["short"] and short.fired
