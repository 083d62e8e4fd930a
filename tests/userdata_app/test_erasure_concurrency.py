"""An append that holds the session's row lock when an erasure starts is erased with the rest;
one that starts during the erasure finds the session gone. PostgreSQL only (real row locks)."""

import threading

import pytest
from django.db import connection, transaction

from agentstate.exceptions import NotFound
from agentstate.tenancy.services import tenant_get_or_create
from sessions_app import services as session_services
from tests.subjects import process_state_held
from tests.userdata_app.erasure_factories import verified_request
from userdata_app import erasure


def in_thread(target, results, name):
    def run():
        try:
            results[name] = target()
        except Exception as exc:  # reported to the test thread
            results[name] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_an_append_in_flight_is_erased_too_and_a_later_one_is_refused(postgres_only):
    tenant = tenant_get_or_create(slug="acme")
    session = session_services.session_create(tenant=tenant, user_id="alice", session_id="s1")
    session_services.message_append(session=session, messages=[{"role": "user", "content": "hi"}])
    request = verified_request(subjects=[(tenant, "alice")], scope="everything")
    appended, release = threading.Event(), threading.Event()
    results = {}

    def slow_append():
        with transaction.atomic():
            result = session_services.message_append(
                session=session, messages=[{"role": "user", "content": "in flight"}]
            )
            appended.set()
            release.wait(30)
        return result

    append_thread = in_thread(slow_append, results, "append")
    assert appended.wait(30)
    erase_thread = in_thread(lambda: erasure.erasure_execute(request=request), results, "erase")
    erase_thread.join(0.5)  # give the erasure time to queue on the row lock
    release.set()
    append_thread.join(30)
    erase_thread.join(30)

    assert results["append"].created
    receipt = results["erase"]
    assert not isinstance(receipt, Exception), receipt
    assert receipt.counts["messages"] == 2
    assert process_state_held(tenant=tenant, user_id="alice")["messages"] == 0
    with pytest.raises(NotFound):
        session_services.message_append(session=session, messages=[{"role": "user", "content": "too late"}])
