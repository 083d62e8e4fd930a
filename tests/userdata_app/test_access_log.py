"""The access log (issue 30): what staff and compliance keys read is chained per tenant under the
receipt key, and verification says where an edit, a deletion or a reordering broke the chain,
while telling retention's removal of a prefix from a deletion."""

import io
import json
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agentstate.tenancy.services import api_key_create
from sessions_app import services
from tests.admin.staff import login, staff
from tests.threads import in_threads
from userdata_app.access_log.chain import (
    ROSTER,
    Pending,
    chain_prune,
    chain_verify,
    chains_roster_unrecorded,
    entries_append,
)
from userdata_app.access_log.models import AccessChainHead, AccessEntry, AccessPolicy
from userdata_app.erasure import erasure_request_verify
from userdata_app.erasure.registry import subject_hash

pytestmark = pytest.mark.django_db

SUBJECT = "dana-7\u2003"  # an id no entry may hold, in any form


def digest(tenant, user_id=SUBJECT) -> str:
    return subject_hash(tenant_slug=tenant.slug, user_id=user_id)[1]


def viewer(client):
    return login(client, staff("viewer", perms=["sessions_app.view_session", "sessions_app.view_message"]))


def chain_of(tenant, n: int) -> list[AccessEntry]:
    view = AccessEntry.Action.VIEW
    return entries_append(
        pending={tenant.slug: [Pending("officer", view, "sessions_app.Session", (i,), "ab" * 32) for i in range(n)]}
    )


def verify_command() -> tuple[str, str]:
    """``manage.py verify_access_log``: its output, and its error if it failed."""

    out = io.StringIO()
    try:
        call_command("verify_access_log", stdout=out)
    except CommandError as exc:
        return out.getvalue(), str(exc)
    return out.getvalue(), ""


def test_staff_opening_a_session_page_writes_one_entry_with_model_pk_and_hash(client, tenant):
    session = services.session_create(tenant=tenant, user_id=SUBJECT, session_id="s1")
    viewer(client)

    response = client.get(reverse("admin:sessions_app_session_change", args=[session.pk]))

    assert response.status_code == 200
    (entry,) = AccessEntry.objects.exclude(tenant=ROSTER)
    assert (entry.tenant, entry.actor, entry.action) == ("acme", "viewer", "view")
    assert (entry.model, entry.object_pks, entry.subject_hash) == (
        "sessions_app.Session",
        [str(session.pk)],
        digest(tenant),
    )
    assert SUBJECT not in json.dumps([entry.detail, entry.purpose, entry.object_pks])
    assert chain_verify(tenant="acme").ok


@pytest.mark.parametrize("reason_required", [False, True])
def test_a_record_page_looks_its_person_up_once(client, tenant, reason_required):
    """The reason gate and the entry share one look-up of the row's person (the query reading its
    tenant's slug and user id), with or without a reason asked for."""
    session = services.session_create(tenant=tenant, user_id=SUBJECT, session_id="s1")
    AccessPolicy.objects.create(tenant=tenant, reason_required=reason_required)
    page = reverse("admin:sessions_app_session_change", args=[session.pk])
    viewer(client)
    if reason_required:
        reason = {"reason": "ticket 4411", "subject": digest(tenant), "next": page}
        client.post(reverse("admin:access_log_accessentry_reason"), reason)

    with CaptureQueriesContext(connection) as queries:
        assert client.get(page).status_code == 200

    lookups = [query["sql"] for query in queries.captured_queries if 'tenant__slug"' in query["sql"]]
    assert len(lookups) == 1, lookups
    (entry,) = AccessEntry.objects.exclude(tenant=ROSTER)
    assert entry.action == "view" and entry.purpose == ("ticket 4411" if reason_required else "")


def test_a_list_of_messages_writes_one_entry_per_person_shown(client, tenant):
    for user_id in (SUBJECT, "erin"):
        session = services.session_create(tenant=tenant, user_id=user_id, session_id="s1")
        services.message_append(session=session, messages=[{"content": "hi"}, {"content": "there"}])
    viewer(client)

    assert client.get(reverse("admin:sessions_app_message_changelist")).status_code == 200

    entries = AccessEntry.objects.exclude(tenant=ROSTER).order_by("seq")
    assert {e.subject_hash for e in entries} == {digest(tenant), digest(tenant, "erin")}
    assert {e.model for e in entries} == {"sessions_app.Message"} and all(len(e.object_pks) == 2 for e in entries)
    assert {e.action for e in entries} == {"list"}


def test_a_page_of_records_no_one_owns_writes_nothing(admin_client, tenant):
    assert admin_client.get(reverse("admin:tenancy_tenant_changelist")).status_code == 200
    assert not AccessEntry.objects.exists()


def test_an_intact_chain_verifies(tenant, other_tenant):
    chain_of(tenant, 3)
    chain_of(other_tenant, 2)

    out, error = verify_command()

    assert not error
    assert "acme: 3 entries verify." in out and "globex: 2 entries verify." in out


def test_an_edited_entry_breaks_the_chain_there(tenant):
    entries = chain_of(tenant, 5)
    AccessEntry.objects.filter(pk=entries[2].pk).update(actor="someone else")

    verdict = chain_verify(tenant="acme")
    out, error = verify_command()

    assert (verdict.broken_at, verdict.problem) == (3, "entry #3 was altered or forged.")
    assert "acme: BROKEN at #3" in out and error


def test_a_deleted_entry_breaks_the_chain_after_its_predecessor(tenant):
    entries = chain_of(tenant, 5)
    AccessEntry.objects.filter(pk=entries[1].pk).delete()

    verdict = chain_verify(tenant="acme")

    assert verdict.broken_at == 3 and "#2..#2 are missing after #1" in verdict.problem


def test_reordered_entries_break_the_chain(tenant):
    """Two entries swapped, their seq renumbered so the numbers still run 1..5."""
    entries = chain_of(tenant, 5)
    AccessEntry.objects.filter(pk=entries[1].pk).update(seq=-2)
    AccessEntry.objects.filter(pk=entries[2].pk).update(seq=2)
    AccessEntry.objects.filter(pk=entries[1].pk).update(seq=3)

    verdict = chain_verify(tenant="acme")

    assert verdict.broken_at == 2 and not verdict.ok


def test_a_copied_mac_does_not_make_a_forged_entry_pass(tenant):
    entries = chain_of(tenant, 2)
    forged = AccessEntry.objects.get(pk=entries[1].pk)
    forged.pk, forged.seq, forged.prev_mac = None, 3, entries[1].mac  # its mac still the copied one
    forged.save()
    assert chain_verify(tenant="acme").broken_at == 3


def test_entries_cut_from_the_end_disagree_with_the_head(tenant):
    entries = chain_of(tenant, 4)
    AccessEntry.objects.filter(pk=entries[3].pk).delete()

    verdict = chain_verify(tenant="acme")

    assert verdict.broken_at == 4 and "head says #4" in verdict.problem


def test_a_chain_deleted_whole_head_and_all_is_named(tenant, other_tenant):
    """Nothing of the tenant's own rows is left to tell: the roster of chains recorded it beginning."""
    chain_of(tenant, 3)
    chain_of(other_tenant, 2)
    AccessEntry.objects.filter(tenant="acme").delete()
    AccessChainHead.objects.filter(tenant="acme").delete()

    out, error = verify_command()

    assert "acme: BROKEN at #1: its whole chain and its head are gone" in out and error
    assert "globex: 2 entries verify." in out and "the roster of chains: 2 entries verify." in out
    one = io.StringIO()
    with pytest.raises(CommandError):
        call_command("verify_access_log", "--tenant", "acme", stdout=one)
    assert one.getvalue().startswith("acme: BROKEN at #1: its whole chain and its head are gone")
    one = io.StringIO()
    call_command("verify_access_log", "--tenant", "globex", stdout=one)
    assert one.getvalue() == "globex: 2 entries verify.\n"


def test_the_roster_deleted_with_the_chain_breaks_too(tenant, other_tenant):
    chain_of(tenant, 3)
    chain_of(other_tenant, 2)
    roster = AccessEntry.objects.filter(tenant=ROSTER).order_by("seq")
    assert [entry.detail for entry in roster] == [{"tenant": "acme"}, {"tenant": "globex"}]
    AccessEntry.objects.filter(tenant="acme").delete()
    AccessChainHead.objects.filter(tenant="acme").delete()
    roster.filter(seq=1).delete()

    out, error = verify_command()

    assert "the roster of chains: BROKEN at #2: entries before #2 are missing" in out and error
    AccessEntry.objects.filter(tenant=ROSTER).delete()
    AccessChainHead.objects.filter(tenant=ROSTER).delete()
    out, error = verify_command()
    assert "the roster of chains: BROKEN at #1: it is gone" in out and "globex: BROKEN at #1" in out and error


def test_chains_begun_before_the_roster_are_recorded_on_upgrade_and_verify(tenant, other_tenant):
    """A deployment upgraded with chains already kept: they are not reported as unrecorded."""
    chain_of(tenant, 3)
    chain_of(other_tenant, 2)
    AccessEntry.objects.filter(tenant=ROSTER).delete()  # as before the roster existed
    AccessChainHead.objects.filter(tenant=ROSTER).delete()
    out, error = verify_command()
    assert "acme: BROKEN at #1: the roster of chains never recorded it." in out and error

    assert chains_roster_unrecorded() == ["acme", "globex"]
    assert chains_roster_unrecorded() == []  # once

    out, error = verify_command()
    assert not error, out
    assert "acme: 3 entries verify." in out and "the roster of chains: 2 entries verify." in out


def test_retention_removes_a_prefix_and_verification_says_so(tenant):
    chain_of(tenant, 3)
    cut = timezone.now() + timedelta(microseconds=1)
    time.sleep(0.01)
    chain_of(tenant, 1)

    removed = chain_prune(tenant="acme", before=cut)

    verdict = chain_verify(tenant="acme")
    assert removed == 3
    assert verdict.ok and verdict.retained_from == 4
    anchor = AccessEntry.objects.get(action="retention")
    assert (anchor.seq, anchor.detail["through_seq"]) == (5, 3)
    out, error = verify_command()
    assert "acme: 2 entries verify; entries before #4 removed by retention." in out and not error


def test_a_prefix_deleted_by_hand_is_not_retention(tenant):
    entries = chain_of(tenant, 4)
    AccessEntry.objects.filter(pk__in=[e.pk for e in entries[:2]]).delete()

    verdict = chain_verify(tenant="acme")

    assert verdict.broken_at == 3 and "no retention anchor" in verdict.problem


@pytest.mark.django_db(transaction=True)
def test_two_servers_writing_at_once_take_turns_on_the_chain_head(postgres_only, tenant):
    """Two connections append 25 entries each at the same time, to a chain with no head yet:
    the head's row lock orders them into one unbroken chain."""

    def write(i: int) -> None:
        for n in range(25):
            entries_append(pending={"acme": [Pending(f"server-{i}", "view", "sessions_app.Session", (n,), "cd" * 32)]})

    _, errors = in_threads(2, write)

    assert not errors
    chained = AccessEntry.objects.filter(tenant="acme").order_by("seq")
    assert list(chained.values_list("seq", flat=True)) == list(range(1, 51))
    assert chain_verify(tenant="acme").ok
    assert connection.vendor == "postgresql"


def test_officers_see_who_saw_a_person_from_the_id_they_type(client, tenant):
    session = services.session_create(tenant=tenant, user_id=SUBJECT, session_id="s1")
    viewer(client).get(reverse("admin:sessions_app_session_change", args=[session.pk]))
    officer = staff("officer", perms=["access_log.view_accessentry"])
    login(client, officer)

    response = client.post(reverse("admin:access_log_accessentry_who_saw"), {"tenant": "acme", "user_id": SUBJECT})

    page = response.content.decode()
    assert response.status_code == 200 and "viewer" in page and "sessions_app.Session" in page
    assert AccessEntry.objects.filter(action="lookup", actor="officer", subject_hash=digest(tenant)).exists()
    other = client.post(reverse("admin:access_log_accessentry_who_saw"), {"tenant": "acme", "user_id": "nobody"})
    assert "No one has read" in other.content.decode()


def test_the_log_exports_as_json_lines_for_an_auditor(client, tenant):
    chain_of(tenant, 3)
    login(client, staff("officer", perms=["access_log.view_accessentry", "access_log.export_accessentry"]))

    response = client.post(reverse("admin:access_log_accessentry_export"), {"tenant": "acme"})

    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [line["seq"] for line in lines] == [1, 2, 3] and lines[1]["prev_mac"] == lines[0]["mac"]


def test_export_needs_its_own_permission(client, tenant):
    login(client, staff("viewer2", perms=["access_log.view_accessentry"]))
    assert client.post(reverse("admin:access_log_accessentry_export"), {"tenant": "acme"}).status_code == 403


def test_a_tenant_can_require_a_reason_before_a_conversation_opens(client, tenant):
    session = services.session_create(tenant=tenant, user_id=SUBJECT, session_id="s1")
    AccessPolicy.objects.create(tenant=tenant, reason_required=True)
    viewer(client)
    page = reverse("admin:sessions_app_session_change", args=[session.pk])

    asked = client.get(page)
    assert 'id="access-reason"' in asked.content.decode() and not AccessEntry.objects.exists()

    given = client.post(
        reverse("admin:access_log_accessentry_reason"),
        {"reason": "ticket 4411: user reports a wrong answer", "subject": digest(tenant), "next": page},
    )
    assert given.status_code == 302 and given["Location"] == page
    opened = client.get(page)
    assert 'id="access-reason"' not in opened.content.decode()
    (entry,) = AccessEntry.objects.exclude(tenant=ROSTER)
    assert entry.purpose == "ticket 4411: user reports a wrong answer"


def test_a_reason_only_returns_to_a_page_of_this_site(client, tenant):
    viewer(client)
    response = client.post(
        reverse("admin:access_log_accessentry_reason"),
        {"reason": "a good reason", "subject": "ab", "next": "https://evil.example/"},
    )
    assert response.status_code == 400


def test_a_compliance_keys_calls_are_logged_with_the_person_hashed(tenant):
    from rest_framework.test import APIClient

    services.session_create(tenant=tenant, user_id=SUBJECT, session_id="s1")
    compliance = APIClient()
    compliance.credentials(
        HTTP_AUTHORIZATION=f"Api-Key {api_key_create(tenant=tenant, name='c', scope='compliance')[1]}"
    )
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(tenant=tenant, name='a')[1]}")

    assert agent.get("/api/v1/sessions/").status_code == 200
    assert not AccessEntry.objects.exists()
    response = compliance.get(f"/api/v1/compliance/users/{SUBJECT}/export/")

    assert response.status_code == 200
    (entry,) = AccessEntry.objects.exclude(tenant=ROSTER)
    assert entry.action == "api" and entry.subject_hash == digest(tenant)
    assert entry.detail["route"] == "compliance-subject-export" and entry.detail["status"] == 200
    assert SUBJECT not in json.dumps(entry.detail) and "/api/" not in json.dumps(entry.detail)


def test_each_erasure_step_is_logged_for_its_subjects(client, tenant):
    from tests.userdata_app.erasure_factories import compliance_group, erasure_request_added, subject_data_create

    officer = staff("officer", groups=["Compliance"])
    assert compliance_group()
    login(client, officer)
    # An id ending in a space is taken only where something is held under it (docs/COMPLIANCE.md).
    subject_data_create(tenant=tenant, user_id=SUBJECT, sessions=1, messages=1)

    request = erasure_request_added(client, tenant, SUBJECT)
    erasure_request_verify(request=request, identity_check="checked", actor=officer)

    added, verified = AccessEntry.objects.filter(action="erasure").order_by("seq")
    for entry in (added, verified):
        assert (entry.actor, entry.model, entry.object_pks) == (
            "officer",
            "userdata_app.ErasureRequest",
            [str(request.pk)],
        )
        assert entry.subject_hash == digest(tenant)
    assert added.detail == {"step": "subject added"} and verified.detail["to_status"] == "verified"


def test_an_erasure_from_the_shell_logs_each_step_with_the_person_added(tenant):
    """``erase_user`` adds its subjects in bulk: the person added is logged as the admin's form logs it."""
    from tests.userdata_app.erasure_factories import subject_data_create

    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=1)

    call_command("erase_user", "--subject", "acme:alice", "--yes", stdout=io.StringIO())

    steps = AccessEntry.objects.filter(action="erasure").order_by("seq")
    assert [entry.detail.get("step") or entry.detail["to_status"] for entry in steps] == [
        "subject added",
        "verified",
        "executed",
    ]
    assert {(entry.actor, entry.subject_hash) for entry in steps} == {("manage.py", digest(tenant, "alice"))}
    assert chain_verify(tenant="acme").ok


def test_the_retention_command_anchors_what_it_removes(tenant):
    chain_of(tenant, 2)

    call_command("prune_access_log", days=0, stdout=io.StringIO())

    assert list(AccessEntry.objects.filter(tenant="acme").values_list("action", flat=True)) == ["retention"]
    assert chain_verify(tenant="acme").ok


def test_without_a_receipt_key_nothing_is_logged_and_the_deploy_check_says_so(client, tenant, settings):
    from django.core.checks import run_checks

    settings.ERASURE_HMAC_KEYS, settings.ERASURE_HMAC_KEY_ID = {}, ""
    session = services.session_create(tenant=tenant, user_id=SUBJECT, session_id="s1")
    viewer(client)

    assert client.get(reverse("admin:sessions_app_session_change", args=[session.pk])).status_code == 200
    assert not AccessEntry.objects.exists()
    assert "access_log.W001" in [message.id for message in run_checks(include_deployment_checks=True)]


def test_every_admin_page_of_declared_data_is_logged_without_naming_it(admin_client, tenant):
    """The map of people's data drives the log: each registered admin of a declared model logs its
    list and its record pages, whoever wrote the admin."""
    from django.contrib import admin

    from agentstate import subject_data
    from tests.userdata_app.erasure_factories import subject_data_create

    subject_data_create(tenant=tenant, user_id=SUBJECT, sessions=1, messages=2)
    opened = []
    for model in admin.site._registry:
        row = model._default_manager.first() if subject_data.declaration_of(model) else None
        if row is None:
            continue
        info = (model._meta.app_label, model._meta.model_name)
        assert admin_client.get(reverse("admin:{}_{}_changelist".format(*info))).status_code == 200
        assert admin_client.get(reverse("admin:{}_{}_change".format(*info), args=[row.pk])).status_code == 200
        logged = AccessEntry.objects.filter(model=model._meta.label, subject_hash=digest(tenant))
        assert set(logged.values_list("action", flat=True)) == {"list", "view"}, model
        assert [str(row.pk)] in list(logged.filter(action="view").values_list("object_pks", flat=True))
        opened.append(model._meta.label)
    expected = {"sessions_app.Session", "sessions_app.Message", "userdata_app.UserDatum", "userdata_app.MemoryItem"}
    assert expected <= set(opened), opened
    assert chain_verify(tenant="acme").ok
