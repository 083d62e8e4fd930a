"""Staff type and see user ids exactly as the API stored them: the admin never strips or splits
an identifier, so a request for "alice\\u00a0" erases that person and never "alice", and every
page before an irreversible step shows the id unambiguously."""

import html
import json
import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from agentstate.validation import identifier_visible
from tests.admin.staff import login, staff
from tests.api.assertions import streamed
from tests.subjects import held, process_state_held
from tests.userdata_app.erasure_factories import erasure_request_added, subject_data_create, verified_request
from userdata_app.erasure.registry import subject_hash
from userdata_app.models import ErasureRequest, ErasureSubject

CHANGELIST = reverse("admin:userdata_app_erasurerequest_changelist")
SESSIONS = reverse("admin:sessions_app_session_changelist")
USER_DATA = reverse("admin:userdata_app_userdatum_changelist")
NBSP, EM_SPACE = "\u00a0", "\u2003"


@pytest.fixture
def officer(db):
    return staff("officer", groups=["Compliance"])


def text(response) -> str:
    """The page as staff read it: tags removed (the escapes are highlighted with markup)."""
    return html.unescape(re.sub(r"<[^>]+>", "", response.content.decode()))


def verify_preview_execute(client, request: ErasureRequest):
    """Verify, open the confirmation page, confirm: returns the confirmation page's HTML."""
    verify = reverse("admin:userdata_app_erasurerequest_lifecycle", args=[request.pk, "verify"])
    assert client.post(verify, {"identity_check": "reply by e-mail"}).status_code == 302
    preview = client.get(reverse("admin:userdata_app_erasurerequest_execute", args=[request.pk]))
    assert preview.status_code == 200
    done = client.post(CHANGELIST, {"action": "execute_erasure", "_selected_action": [request.pk], "post": "yes"})
    assert done.status_code == 302
    request.refresh_from_db()
    assert request.status == ErasureRequest.Status.EXECUTED
    return text(preview)


def holdings(tenant, user_id: str) -> tuple[int, int]:
    return (
        process_state_held(tenant=tenant, user_id=user_id)["messages"],
        held(tenant=tenant, user_id=user_id)["user_data"],
    )


def test_a_request_for_alice_nbsp_erases_that_subject_and_never_alice(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=2)
    subject_data_create(tenant=tenant, user_id="alice" + NBSP, sessions=2, messages=3)

    request = erasure_request_added(client, tenant, "alice" + NBSP)
    assert request.subjects.get().user_id == "alice" + NBSP
    page = verify_preview_execute(client, request)

    assert "alice⟦U+00A0⟧" in page and "6 characters" in page
    assert holdings(tenant, "alice" + NBSP) == (0, 0)
    assert holdings(tenant, "alice") == (2, 2)  # the bystander keeps everything
    assert request.receipt.counts["messages"] == 6 and request.receipt.counts["user_data"] == 2
    [entry] = request.receipt.subjects
    assert entry["hmac_sha256"] == subject_hash(tenant_slug="acme", user_id="alice" + NBSP)[1]
    assert entry["hmac_sha256"] != subject_hash(tenant_slug="acme", user_id="alice")[1]


def test_a_request_for_space_bob_erases_space_bobs_data(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id=" bob", sessions=1, messages=2)
    subject_data_create(tenant=tenant, user_id="bob", sessions=1, messages=2)

    request = erasure_request_added(client, tenant, " bob")
    page = verify_preview_execute(client, request)

    assert "⟦U+0020⟧bob" in page and "4 characters" in page
    assert request.receipt.counts["messages"] == 2 and request.receipt.counts["user_data"] == 2
    assert holdings(tenant, " bob") == (0, 0)
    assert holdings(tenant, "bob") == (2, 2)


def test_the_export_of_an_id_ending_in_an_em_space_holds_that_person_only(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="x" + EM_SPACE, sessions=1, messages=2)
    subject_data_create(tenant=tenant, user_id="x", sessions=1, messages=4)
    request = erasure_request_added(client, tenant, "x" + EM_SPACE)

    change_page = text(client.get(reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])))
    assert "x⟦U+2003⟧" in change_page  # what the export is about, before downloading it
    response = client.get(reverse("admin:userdata_app_erasurerequest_export", args=[request.pk]))
    assert response.status_code == 200
    [subject] = json.loads(streamed(response))["subjects"]
    assert subject["user_id"] == "x" + EM_SPACE
    assert [len(s["messages"]) for s in subject["sessions"]] == [2]
    assert {d["key"]: d["value"] for d in subject["user_data"]}["email"] == f"x{EM_SPACE}@example.com"


def test_the_verified_request_page_shows_the_subject_with_markers(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice" + NBSP, sessions=0)  # an id with a space is taken if held
    request = verified_request(subjects=[(tenant, "alice" + NBSP)], scope="user_data")
    page = text(client.get(reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])))
    assert "alice⟦U+00A0⟧" in page and "6 characters" in page


def test_an_id_with_invisible_characters_is_refused_or_kept_never_cleaned(client, officer, tenant):
    """The form validates with the API's function: "/" and control characters are refused, a
    zero-width space is an ordinary (if suspicious) character and is kept."""
    login(client, officer)
    zwsp = "ali\u200bce"
    request = erasure_request_added(client, tenant, zwsp, scope="user_data")
    assert ErasureSubject.objects.get(request=request).user_id == zwsp
    page = text(client.get(reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])))
    assert "ali⟦U+200B⟧ce" in page


# --- Searches and filters -----------------------------------------------------------------------


def test_session_search_matches_the_whole_term_exactly(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=2, messages=1)
    subject_data_create(tenant=tenant, user_id="alice" + NBSP, sessions=1, messages=1)
    subject_data_create(tenant=tenant, user_id=" bob", sessions=1, messages=1)

    found = client.get(SESSIONS, {"q": "alice" + NBSP}).context["cl"].result_list
    assert [s.user_id for s in found] == ["alice" + NBSP]
    assert [s.user_id for s in client.get(SESSIONS, {"q": " bob"}).context["cl"].result_list] == [" bob"]
    assert client.get(SESSIONS, {"q": "bob"}).context["cl"].result_count == 0
    assert client.get(SESSIONS, {"q": "alice"}).context["cl"].result_count == 2
    # The list shows which "alice" each row belongs to.
    assert "alice⟦U+00A0⟧" in text(client.get(SESSIONS, {"q": "alice" + NBSP}))


def test_user_data_search_matches_the_whole_term_exactly(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="carol", sessions=0)
    subject_data_create(tenant=tenant, user_id="carol email", sessions=0)
    found = client.get(USER_DATA, {"q": "carol email"}).context["cl"].result_list
    assert sorted(d.user_id for d in found) == ["carol email", "carol email"]


@pytest.mark.parametrize(
    "url, params",
    [
        (SESSIONS, {"q": "a/b"}),
        (SESSIONS, {"agent_id": "a\x00b"}),
        (SESSIONS, {"user_id": "a/b"}),
        (USER_DATA, {"q": "x" * 129}),
        (reverse("admin:sessions_app_message_changelist"), {"role": "r\x00"}),
    ],
)
def test_a_search_or_filter_that_no_id_can_match_says_why(client, officer, tenant, url, params):
    """Validated like the API validates the id (a NUL would reach PostgreSQL as a 500)."""
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=1)
    response = client.get(url, params)
    assert response.status_code == 200
    assert response.context["cl"].result_count == 0
    assert any("must" in str(m) for m in get_messages(response.wsgi_request))


def test_the_user_id_filter_is_exact_and_combines_with_the_search(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=2, messages=1)
    subject_data_create(tenant=tenant, user_id="alice" + NBSP, sessions=2, messages=1)
    found = client.get(SESSIONS, {"q": "s1", "user_id": "alice" + NBSP}).context["cl"].result_list
    assert [(s.user_id, s.session_id) for s in found] == [("alice" + NBSP, "s1")]
    found = client.get(USER_DATA, {"q": "email", "user_id": "alice"}).context["cl"].result_list
    assert [d.user_id for d in found] == ["alice"]


# --- Bad primary keys in the erasure admin's own URLs ----------------------------------------


@pytest.mark.crosscheck
@pytest.mark.parametrize(
    "name, args",
    [
        ("execute", []),
        ("export", []),
        ("lifecycle", ["verify"]),
        ("lifecycle", ["nope"]),
    ],
)
@pytest.mark.parametrize("pk", ["abc", "1.5", "999999", "9" * 30])
def test_custom_erasure_urls_answer_404_for_a_pk_that_is_not_a_request(client, officer, tenant, name, args, pk):
    login(client, officer)
    verified_request(subjects=[(tenant, "alice")], scope="user_data")
    url = reverse(f"admin:userdata_app_erasurerequest_{name}", args=[pk, *args])
    assert client.get(url).status_code == 404
    assert client.post(url, {"post": "yes"}).status_code == 404


@pytest.mark.parametrize("name", ["change", "history", "delete"])
def test_djangos_own_erasure_urls_do_not_fail_on_a_non_numeric_pk(client, officer, name):
    login(client, officer)
    response = client.get(reverse(f"admin:userdata_app_erasurerequest_{name}", args=["abc"]))
    assert response.status_code in (302, 403, 404)


def test_actions_on_a_non_numeric_pk_change_nothing_and_do_not_fail(client, officer, tenant):
    login(client, officer)
    request = verified_request(subjects=[(tenant, "alice")], scope="user_data")
    for action in ("execute_erasure", "export_subject_data"):
        for pk in ("abc", "9" * 30):
            response = client.post(CHANGELIST, {"action": action, "_selected_action": [request.pk, pk], "post": "yes"})
            assert response.status_code in (200, 302)
    request.refresh_from_db()
    assert request.status == ErasureRequest.Status.VERIFIED


# --- The helper that spells an id out -------------------------------------------------------------


def test_identifier_visible_spells_out_every_character_a_reader_could_miss():
    assert identifier_visible("alice") == "alice"
    assert identifier_visible("Zoë Smith") == "Zoë Smith"  # one inner ASCII space and letters stay
    assert identifier_visible("alice" + NBSP) == "alice⟦U+00A0⟧"
    assert identifier_visible(" bob") == "⟦U+0020⟧bob"
    assert identifier_visible("bob ") == "bob⟦U+0020⟧"
    assert identifier_visible("a  b") == "a⟦U+0020⟧⟦U+0020⟧b"
    assert identifier_visible("x" + EM_SPACE) == "x⟦U+2003⟧"
    assert identifier_visible("a\u200bb\u202ec\ufe0f") == "a⟦U+200B⟧b⟦U+202E⟧c⟦U+FE0F⟧"
    assert identifier_visible("\u3164") == "⟦U+3164⟧"  # the Hangul filler: a letter nobody sees


def test_identifier_visible_never_shows_two_ids_alike():
    ids = [
        "alice",
        "alice" + NBSP,
        "alice ",
        " alice",
        "alice⟦U+00A0⟧",
        "alice\u2003",
        "alice\u200b",
        "a lice",
        "a  lice",
        "a\u00a0lice",
        "⟦",
        "⟦U+0020⟧",
        " ",
    ]
    shown = [identifier_visible(i) for i in ids]
    assert len(set(shown)) == len(ids), shown
