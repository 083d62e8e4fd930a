"""Real threads released together, for the concurrency tests (each closes its own connection)."""

import threading

from django.db import connection


def in_threads(count: int, work) -> tuple[list, list[BaseException]]:
    """Run ``work(i)`` in ``count`` threads released together; returns results and errors."""
    barrier = threading.Barrier(count)
    results: list = [None] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    return results, errors
