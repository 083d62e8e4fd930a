"""What staff read on the admin's pages (issue 15): every page about a session names it as
``tenant / user / session``, linked; the session page is tidy and leads to the user's other data."""

import html
import re
from urllib.parse import quote

import pytest
from django.contrib import admin
from django.urls import reverse

from agentstate import subject_data
from backends.adk.people.models import AdkUserState
from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session
from tests.admin.staff import login, staff
from tests.userdata_app.erasure_factories import subject_data_create

pytestmark = pytest.mark.django_db
NBSP = "\u00a0"


@pytest.fixture
def officer(db):
    return staff("officer", groups=["Compliance"])


def page_of(client, url, **params) -> str:
    response = client.get(url, params)
    assert response.status_code == 200, url
    return response.content.decode()


def text(page: str) -> str:
    """The page as staff read it: tags removed (marks sit inside an id), whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())


def label_links(session: Session) -> list[str]:
    sessions = reverse("admin:sessions_app_session_changelist")
    return [
        f'href="{sessions}?tenant__id__exact={session.tenant_id}"',
        f'href="{sessions}?tenant__id__exact={session.tenant_id}&amp;user_id={quote(session.user_id)}"',
        f'href="{reverse("admin:sessions_app_session_change", args=[session.pk])}"',
    ]


@pytest.mark.parametrize("model", [Message, Round, Checkpoint, AgentTransition])
def test_child_lists_and_pages_name_the_session_as_tenant_user_session_linked(client, officer, tenant, model):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice" + NBSP, sessions=1, messages=2)
    session = Session.objects.get()
    name = model._meta.model_name
    for page in (
        page_of(client, reverse(f"admin:sessions_app_{name}_changelist")),
        page_of(client, reverse(f"admin:sessions_app_{name}_change", args=[model.objects.first().pk])),
    ):
        assert "acme / alice⟦U+00A0⟧ / s0" in text(page)
        assert all(link in page for link in label_links(session)), page
        assert f"Session #{session.pk}" not in text(page)


def test_the_session_page_title_names_tenant_user_and_session(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=2)
    session = Session.objects.get()
    page = page_of(client, reverse("admin:sessions_app_session_change", args=[session.pk]))
    title = page[page.index('<h2 class="session-title">') :]
    title = title[: title.index("</h2>")]
    assert text(title) == "acme / alice / s0" and all(link in title for link in label_links(session))
    assert "<title>acme / alice / s0 |" in page
    crumbs = page[page.index('<div class="breadcrumbs">') :]
    assert text(crumbs[: crumbs.index("</div>")]).endswith("› acme / alice / s0")
    assert "alice" not in str(session)  # __str__ (kept by the admin log) stays free of the user id


def test_the_session_page_has_no_stray_labels_one_date_format_and_links_the_user(client, officer, tenant):
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=2, messages=2)
    session = Session.objects.get(session_id="s0")
    page = page_of(client, reverse("admin:sessions_app_session_change", args=[session.pk]))

    assert not re.search(r"<label[^>]*>\s*:\s*</label>", page)  # the sections have headings, no ":" label
    shown = text(page)
    assert not re.search(r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\.? \d{1,2}, \d{4}", shown)
    assert not re.search(r"\b[ap]\.m\.", shown)
    assert re.search(r"Created at: ?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", shown)

    user = page[page.index("field-user_id_linked") :]
    user = user[: user.index("</div>", user.index('class="readonly"'))]
    sessions = client.get(
        reverse("admin:sessions_app_session_changelist") + f"?tenant__id__exact={tenant.pk}&user_id=alice"
    )
    data = client.get(
        reverse("admin:userdata_app_userdatum_changelist") + f"?tenant__id__exact={tenant.pk}&user_id=alice"
    )
    assert f'href="{sessions.request["PATH_INFO"]}?tenant__id__exact={tenant.pk}&amp;user_id=alice"' in user
    assert f'href="{data.request["PATH_INFO"]}?tenant__id__exact={tenant.pk}&amp;user_id=alice"' in user
    assert sessions.context["cl"].result_count == 2 and data.context["cl"].result_count == 2


def test_the_user_id_links_to_every_list_of_the_map_that_holds_the_users_rows(client, officer, tenant):
    """One link per model of the map of people's data whose rows carry a user id (registered in
    the admin), each a list of that user's rows only: a model declared later gets its link."""
    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=1)
    subject_data_create(tenant=tenant, user_id="bob", sessions=1, messages=1)
    AdkUserState.objects.create(tenant=tenant, app_name="app", user_id="alice", state="{}")
    session = Session.objects.get(user_id="alice")
    page = page_of(client, reverse("admin:sessions_app_session_change", args=[session.pk]))
    user = page[page.index("field-user_id_linked") :]
    links = re.findall(r'<a href="([^"]+)">([^<]+)</a>', user[: user.index("</div>", user.index('class="readonly"'))])

    owners = [d for d in subject_data.declared() if not d.via and admin.site.is_registered(d.model)]
    assert sorted(label for _, label in links) == sorted(subject_data.category_label(d.category) for d in owners)
    for href, label in links:
        listed = client.get(href.replace("&amp;", "&"))
        assert listed.status_code == 200 and "e=1" not in listed.request["QUERY_STRING"], label
        rows = listed.context["cl"].queryset
        assert rows.exists() and not rows.exclude(user_id="alice").exists(), label


def test_erasure_request_dates_use_the_same_format(client, officer, tenant):
    from userdata_app import erasure

    login(client, officer)
    request = erasure.erasure_request_create(subjects=[(tenant, "alice")])
    shown = text(page_of(client, reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])))
    assert not re.search(r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\.? \d{1,2}, \d{4}", shown)
    assert re.search(f"Due: ?{request.due_on:%Y-%m-%d}", shown)


# --- Item 2: every changelist has the searches and filters staff need --------------------------

MESSAGES = reverse("admin:sessions_app_message_changelist")


@pytest.fixture
def two_tenants(tenant, other_tenant):
    subject_data_create(tenant=tenant, user_id="alice", sessions=2, messages=3)
    subject_data_create(tenant=tenant, user_id="bob", sessions=1, messages=2)
    subject_data_create(tenant=other_tenant, user_id="alice", sessions=1, messages=4)
    return tenant, other_tenant


def rows(client, url, **params):
    response = client.get(url, params)
    assert response.status_code == 200
    return response.context["cl"].result_list


def owners(found) -> list[tuple[str, str, str]]:
    return sorted({(r.session.tenant.slug, r.session.user_id, r.session.session_id) for r in found})


def test_messages_filter_by_tenant_user_session_id_role_and_search(client, officer, two_tenants):
    tenant, other = two_tenants
    login(client, officer)
    assert len(rows(client, MESSAGES, tenant__id__exact=other.pk)) == 4
    assert owners(rows(client, MESSAGES, tenant__id__exact=tenant.pk, user_id="alice")) == [
        ("acme", "alice", "s0"),
        ("acme", "alice", "s1"),
    ]
    assert owners(rows(client, MESSAGES, user_id="alice", session_id="s1")) == [("acme", "alice", "s1")]
    assert len(rows(client, MESSAGES, session_id="s0")) == 3 + 2 + 4
    assert owners(rows(client, MESSAGES, q="bob")) == [("acme", "bob", "s0")]  # a user id or a session id, exactly
    assert len(rows(client, MESSAGES, q="s1")) == 3
    assert len(rows(client, MESSAGES, q="Bob")) == 0

    page = page_of(client, MESSAGES)
    for role in ("user", "assistant", "system", "tool"):
        assert f'href="?role={role}"' in page  # roles as choices, not a free-text box
    assert len(rows(client, MESSAGES, role="user", user_id="bob")) == 2
    assert len(rows(client, MESSAGES, role="assistant")) == 0


def test_rounds_checkpoints_and_transitions_filter_and_search_too(client, officer, two_tenants):
    tenant, other = two_tenants
    login(client, officer)
    for name in ("round", "checkpoint", "agenttransition"):
        url = reverse(f"admin:sessions_app_{name}_changelist")
        assert len(rows(client, url)) == 4
        assert owners(rows(client, url, tenant__id__exact=other.pk)) == [("globex", "alice", "s0")]
        assert owners(rows(client, url, user_id="bob")) == [("acme", "bob", "s0")]
        assert len(rows(client, url, session_id="s1")) == 1
        assert owners(rows(client, url, q="alice", tenant__id__exact=tenant.pk)) == [
            ("acme", "alice", "s0"),
            ("acme", "alice", "s1"),
        ]


def test_a_child_date_filter_needs_a_user_or_a_session_and_says_so(client, officer, two_tenants):
    login(client, officer)
    today = {"created_at__gte": "2000-01-01 00:00+00:00", "created_at__lt": "2000-01-02 00:00+00:00"}
    assert len(rows(client, MESSAGES, user_id="alice", **today)) == 0  # applied: nothing that old
    response = client.get(MESSAGES, today)  # across the whole table: left off, with the reason
    assert response.context["cl"].result_count == 3 + 3 + 2 + 4
    assert "applies once a user id or a session id is chosen" in text(response.content.decode())


def test_sessions_filter_by_created_date_agent_and_workspace(client, officer, two_tenants):
    login(client, officer)
    sessions = reverse("admin:sessions_app_session_changelist")
    assert len(rows(client, sessions, created_at__gte="2000-01-01 00:00+00:00", agent_id="planner")) == 4
    assert len(rows(client, sessions, created_at__gte="2999-01-01 00:00+00:00")) == 0
    assert len(rows(client, sessions, workspace_id="nowhere")) == 0


# --- Item 5: the dashboard's cards lead where they say; "View site" leads somewhere ------------


def test_dashboard_cards_link_to_what_they_count(client, officer, tenant, fresh_dashboard):
    from datetime import timedelta

    from django.utils import timezone

    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=2, messages=3)
    Session.objects.filter(session_id="s1").update(updated_at=timezone.now() - timedelta(days=3))  # live, idle
    page = page_of(client, reverse("admin:index"))
    cards = {
        label: href
        for href, label in re.findall(
            r'<a class="agentstate-card[^"]*" href="([^"]+)"><span class="n">\d+</span><span>([^<]+)</span>', page
        )
    }
    assert set(cards) == {
        "sessions",
        "messages",
        "active sessions today",
        "open erasure requests",
        "overdue erasure requests",
        "open access requests",
        "overdue access requests",
        "active legal holds",
    }

    active = client.get(html.unescape(cards["active sessions today"]))
    assert [s.session_id for s in active.context["cl"].result_list] == ["s0"]  # the idle live session is not listed
    assert re.search(r'<span class="n">1</span><span>active sessions today', page)
    messages = client.get(html.unescape(cards["messages"]))
    assert messages.context["cl"].model is Message and messages.context["cl"].result_count == 6


def test_the_charts_last_day_label_ends_inside_the_chart(client, officer, tenant, fresh_dashboard):
    login(client, officer)
    page = page_of(client, reverse("admin:index"))
    width = int(re.search(r'viewBox="0 -4 (\d+) ', page).group(1))
    labels = re.findall(r'<text x="(\d+)" y="\d+" text-anchor="(\w+)" class="tick">', page)
    x, anchor = labels[-1]
    assert anchor == "end" and int(x) <= width
    assert all(a == "start" for _, a in labels[:-1])


def test_view_site_leads_to_a_page_pointing_to_the_admin_and_the_api_docs(client, officer):
    login(client, officer)
    assert 'href="/">View site</a>' in page_of(client, reverse("admin:index"))
    client.logout()
    home = client.get("/")
    assert home.status_code == 200
    page = home.content.decode()
    assert f'href="{reverse("admin:index")}"' in page and f'href="{reverse("docs")}"' in page


# --- Item 9: only the Compliance group decides on a request ------------------------------------


def test_staff_without_the_compliance_group_cannot_verify_hold_reject_or_extend(client, browser_staff, tenant):
    from userdata_app import erasure
    from userdata_app.models import ErasureRequest

    login(client, browser_staff)  # may view, add and change requests, nothing more
    request = erasure.erasure_request_create(subjects=[(tenant, "alice")])
    page = page_of(client, reverse("admin:userdata_app_erasurerequest_change", args=[request.pk]))
    for step in ("verify", "extend", "hold", "reject"):
        assert reverse("admin:userdata_app_erasurerequest_lifecycle", args=[request.pk, step]) not in page  # no button
    shown = text(page)
    assert (
        "Mark verified, extend deadline, put on legal hold, reject: needs the permission "
        "“Can verify, extend, hold, release and reject erasure requests”" in shown
    )
    assert "Export subject data: needs the permission “Can export everything held about a subject”" in shown
    assert "Compliance group" in shown

    for step, data in (
        ("verify", {"identity_check": "x"}),
        ("hold", {"reason": "x"}),
        ("extend", {"months": "1", "reason": "x"}),
        ("reject", {"reason": "x", "subject_informed_on": "2026-01-01"}),
    ):
        response = client.post(reverse("admin:userdata_app_erasurerequest_lifecycle", args=[request.pk, step]), data)
        assert response.status_code == 403 and "Compliance group" in text(response.content.decode())
    request.refresh_from_db()
    assert request.status == ErasureRequest.Status.RECEIVED and not request.is_extended


@pytest.mark.parametrize("who", ["officer", "superuser"])
def test_the_compliance_group_and_superusers_may_decide(client, officer, admin_user, tenant, who):
    from userdata_app import erasure
    from userdata_app.models import ErasureRequest

    login(client, officer if who == "officer" else admin_user)
    request = erasure.erasure_request_create(subjects=[(tenant, "alice")])
    page = page_of(client, reverse("admin:userdata_app_erasurerequest_change", args=[request.pk]))
    assert "Mark verified" in page and 'class="erasure-missing-permissions' not in page
    verify = reverse("admin:userdata_app_erasurerequest_lifecycle", args=[request.pk, "verify"])
    assert client.post(verify, {"identity_check": "reply by e-mail"}).status_code == 302
    request.refresh_from_db()
    assert request.status == ErasureRequest.Status.VERIFIED


# --- Item 8: the execute page, the receipt and the history speak one language ------------------


def test_execute_breadcrumb_receipt_download_and_one_vocabulary(client, officer, tenant):
    import json

    from tests.userdata_app.erasure_factories import verified_request

    login(client, officer)
    subject_data_create(tenant=tenant, user_id="alice", sessions=1, messages=2)
    request = verified_request(subjects=[(tenant, "alice")], scope="everything")
    change = reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])

    confirmation = page_of(client, reverse("admin:userdata_app_erasurerequest_execute", args=[request.pk]))
    crumbs = confirmation[confirmation.index('<div class="breadcrumbs">') :]
    crumbs = crumbs[: crumbs.index("</div>")]
    assert f'<a href="{change}">Erasure request #{request.pk}</a>' in crumbs and text(crumbs).endswith(
        "› Execute erasure"
    )
    assert (
        "user data" in text(confirmation) and "working state" in text(confirmation) and "user_data" not in confirmation
    )

    done = client.post(
        reverse("admin:userdata_app_erasurerequest_changelist"),
        {"action": "execute_erasure", "_selected_action": [request.pk], "post": "yes"},
        follow=True,
    )
    shown = text(done.content.decode())
    assert "erased (2 user data, 1 memories, 1 artifacts, 1 sessions, 2 messages" in shown  # the success message
    history = shown[shown.index("History") :]
    assert "Verified → Executed" in history and "2 user data" in history and "1 working state" in history
    assert "user_data" not in shown and "working_state" not in shown

    download = reverse("admin:userdata_app_erasurerequest_receipt", args=[request.pk])
    assert f'href="{download}"' in done.content.decode() and "window.print()" in done.content.decode()
    receipt = client.get(download)
    assert receipt["Content-Type"] == "application/json" and "attachment" in receipt["Content-Disposition"]
    document = json.loads(receipt.content)
    assert document["request"] == request.pk and document["counts"]["messages"] == 2
    assert "alice" not in receipt.content.decode()


def test_a_request_not_executed_has_no_receipt_to_download(client, officer, tenant):
    from userdata_app import erasure

    login(client, officer)
    request = erasure.erasure_request_create(subjects=[(tenant, "alice")])
    assert client.get(reverse("admin:userdata_app_erasurerequest_receipt", args=[request.pk])).status_code == 404


def test_pages_of_large_values_show_their_start_and_link_the_whole(client, officer, tenant):
    """Thirty messages of 5 MiB made a session page of 105 MB: a list row and the session page show
    the first 2,000 characters of a value and how long it is; its own page shows it whole."""
    from sessions_app import services

    login(client, officer)
    session = services.session_create(tenant=tenant, user_id="alice", session_id="s1")
    large = "start of a long answer " + "x" * 200_000
    services.message_append(
        session=session, messages=[{"role": "user", "content": large}, {"role": "user", "content": "short"}]
    )
    services.round_save(tenant=tenant, user_id="alice", session_id="s1", state={"notes": large})
    services.checkpoint_create(session=session, label="big", state={"notes": large})

    page = page_of(client, reverse("admin:sessions_app_session_change", args=[session.pk]))
    assert len(page) < 100_000 and "x" * 2_001 not in page
    assert "start of a long answer" in page and "short" in page
    assert f"{len(large) + 2:,} characters in all" in page  # the message's JSON text: the string, quoted
    listed = page_of(client, reverse("admin:sessions_app_message_changelist"))
    assert len(listed) < 100_000 and "start of a long answer" in listed
    message = Message.objects.get(seq=1)
    assert large in text(page_of(client, reverse("admin:sessions_app_message_change", args=[message.pk])))
