"""What staff read of a count per category (issue 41, finding 15): only the categories that hold
rows, one line each in a table or a short list, on every surface that shows one: an erasure's and an
access request's preview, the legal holds' banners, the confirmation page, the success message, the
receipt, the history and ``erase_user``'s question. Sixteen categories, zeros included, in one
sentence, read as if something were held everywhere."""

import html
import re
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from agentstate import subject_data
from agentstate.holds.services import legal_hold_place
from sessions_app.models import Session
from tests.admin.staff import login, staff
from tests.userdata_app.erasure_factories import subject_data_create, verified_request
from userdata_app import access_requests

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:userdata_app_erasurerequest_changelist")
LABELS = [subject_data.category_label(c) for c in subject_data.categories(*subject_data.KINDS)]


def text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def assert_no_zero(page: str) -> None:
    """No category counted as zero, in a sentence ("0 memories") or in a table row."""
    read = text(page)
    for label in LABELS:
        assert not re.search(rf"(?<![\d,]){0} {re.escape(label)}\b", read), (label, read)
        assert not re.search(rf"<td>{re.escape(html.escape(label))}</td><td>0</td>", page), label


@pytest.fixture
def officer(db):
    return staff("officer", groups=["Compliance"])


@pytest.fixture
def held_alice(tenant):
    """Alice's data in a few categories, one of her two sessions under a legal hold."""
    subject_data_create(tenant=tenant, user_id="alice", sessions=2, messages=2)
    s0 = Session.objects.get(tenant=tenant, user_id="alice", session_id="s0")
    legal_hold_place(tenant=tenant, user_id="alice", session_pk=s0.pk, reference="CASE-2", reason="Smith v. Acme")


@pytest.mark.needs_backends("adk")
def test_every_count_staff_read_names_only_what_holds_rows(client, officer, tenant, held_alice):
    login(client, officer)
    request = verified_request(subjects=[(tenant, "alice")], scope="everything")
    change = reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])

    preview = client.get(change).content.decode()
    assert_no_zero(preview)
    assert "<td>messages</td><td>2</td>" in preview  # the session not held
    banner = text(preview[preview.index('class="erasure-withheld"') :])
    assert "Legal hold CASE-2 keeps the held sessions: 1 sessions, 2 messages," in banner

    access = access_requests.access_request_create(subjects=[(tenant, "alice")])
    held = client.get(reverse("admin:userdata_app_accessrequest_change", args=[access.pk])).content.decode()
    assert_no_zero(held)
    assert "<td>messages</td><td>2</td>" in held

    confirmation = client.get(reverse("admin:userdata_app_erasurerequest_execute", args=[request.pk])).content.decode()
    assert_no_zero(confirmation)
    assert "<td>sessions</td><td>1</td>" in confirmation

    done = client.post(
        CHANGELIST,
        {"action": "execute_erasure", "_selected_action": [request.pk], "post": "yes", "withhold_held": "yes"},
        follow=True,
    ).content.decode()
    assert_no_zero(done)  # the success message, the receipt, its banner and the history
    message = text(done[done.index('class="messagelist"') :])
    assert re.search(r"erased \(2 user data, 1 memories, 1 artifacts, 1 sessions, 2 messages, [^)]*\)", message)
    receipt = done[done.index('class="erasure-receipt"') :]
    assert "<td>user data</td><td>2</td>" in receipt and "<td>ADK user state</td>" not in receipt


def test_nothing_counted_reads_as_nothing(client, officer, tenant):
    login(client, officer)
    access = access_requests.access_request_create(subjects=[(tenant, "nobody")])

    page = client.get(reverse("admin:userdata_app_accessrequest_change", args=[access.pk])).content.decode()

    assert_no_zero(page)
    assert '<tr><td colspan="2">nothing</td></tr>' in page and "Nothing found for these subjects" in page


def test_erase_user_asks_about_the_categories_that_hold_rows(tenant, held_alice, monkeypatch):
    class Terminal(StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal("no\n"))
    out = StringIO()
    with pytest.raises(CommandError, match="Not confirmed"):
        call_command("erase_user", "--subject", f"{tenant.slug}:alice", "--scope", "everything", stdout=out)

    asked = out.getvalue()
    assert "Rows that will be erased:\n  user data: 2\n" in asked and "  messages: 2\n" in asked
    assert not re.search(r": 0\n", asked)
