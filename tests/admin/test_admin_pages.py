"""What staff read on the admin's pages (issue 15): every page about a session names it as
``tenant / user / session``, linked; the session page is tidy and leads to the user's other data."""
import html
import re
from urllib.parse import quote

import pytest
from django.urls import reverse

from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session
from tests.admin.test_admin import login, staff
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
    title = page[page.index('<h2 class="session-title">'):]
    title = title[:title.index("</h2>")]
    assert text(title) == "acme / alice / s0" and all(link in title for link in label_links(session))
    assert "<title>acme / alice / s0 |" in page
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

    user = page[page.index("field-user_id_linked"):]
    user = user[:user.index("</div>", user.index('class="readonly"'))]
    sessions = client.get(reverse("admin:sessions_app_session_changelist") + f"?tenant__id__exact={tenant.pk}&user_id=alice")
    data = client.get(reverse("admin:userdata_app_userdatum_changelist") + f"?tenant__id__exact={tenant.pk}&user_id=alice")
    assert f'href="{sessions.request["PATH_INFO"]}?tenant__id__exact={tenant.pk}&amp;user_id=alice"' in user
    assert f'href="{data.request["PATH_INFO"]}?tenant__id__exact={tenant.pk}&amp;user_id=alice"' in user
    assert sessions.context["cl"].result_count == 2 and data.context["cl"].result_count == 2


def test_erasure_request_dates_use_the_same_format(client, officer, tenant):
    from userdata_app import erasure

    login(client, officer)
    request = erasure.erasure_request_create(subjects=[(tenant, "alice")])
    shown = text(page_of(client, reverse("admin:userdata_app_erasurerequest_change", args=[request.pk])))
    assert not re.search(r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\.? \d{1,2}, \d{4}", shown)
    assert re.search(f"Due: ?{request.due_on:%Y-%m-%d}", shown)
