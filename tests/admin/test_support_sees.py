"""What Support sees (issue 41): no value of a user-data category of the map of people's data (user
data, ADK user: state and each event's user: delta, memories, artifacts) reaches a Support
response, while process state stays readable; and no page shows Support a link it cannot open.
The admin registry and the URL configuration are walked (``tests.surfaces``) over a subject with
a marker in every category."""

import re
from html import unescape

import pytest
from django.urls import reverse

from agentstate import subject_data
from agentstate.subjects import USER_DATA
from sessions_app.models import Session
from tests.admin.staff import login, staff
from tests.surfaces import ADK_SESSION, admin_urls, routes, seed
from userdata_app.migrations._grants import SUPPORT_GROUP

pytestmark = pytest.mark.django_db

ADMIN_LINK = re.compile(r'href="(/admin/[^"#]*)"')


@pytest.fixture
def seeded(api, tenant):
    return seed(api)


@pytest.fixture
def support(client):
    return login(client, staff("helpdesk", groups=[SUPPORT_GROUP]))


def user_data_found(seeded, content: bytes) -> set[str]:
    return seeded.found(content, *subject_data.categories(USER_DATA))


def body(answer) -> bytes:
    return b"".join(answer.streaming_content) if answer.streaming else answer.content


def admin_links(content: bytes) -> set[str]:
    return {unescape(link) for link in ADMIN_LINK.findall(content.decode("utf-8", "replace"))}


def test_support_reads_an_adk_sessions_events_and_state_without_its_user_state(support, seeded):
    session = Session.objects.get(session_id=ADK_SESSION)

    page = support.get(reverse("admin:sessions_app_session_change", args=[session.pk]))

    assert page.status_code == 200
    assert user_data_found(seeded, page.content) == set()
    # The events and the process state in their deltas stay readable.
    assert seeded.marks["adk_text"].encode() in page.content and seeded.marks["adk_state"].encode() in page.content
    assert b"your account may not read it" in page.content


def test_an_officer_reads_the_same_page_with_the_user_state(admin_client, seeded):
    session = Session.objects.get(session_id=ADK_SESSION)

    page = admin_client.get(reverse("admin:sessions_app_session_change", args=[session.pk]))

    assert "adk_user_state" in seeded.found(page.content)


def test_a_session_page_shows_support_only_links_it_can_open(support, seeded):
    session = Session.objects.get(session_id="s1")
    page = support.get(reverse("admin:sessions_app_session_change", args=[session.pk]))

    links = admin_links(page.content)

    assert page.status_code == 200 and links
    assert not [link for link in links if "userdata_app" in link]  # user data, memories, artifacts
    assert {link: support.get(link).status_code for link in links if support.get(link).status_code == 403} == {}


@pytest.mark.slow
def test_no_support_response_holds_user_data_and_no_page_links_where_support_cannot_go(support, seeded):
    """Every page of every registered admin (``get_urls``, each row of the database) and every
    route of the URL configuration, opened as Support: no marker of a user-data category in any
    answer; every admin link on a page Support opened answers something other than 403."""
    problems, links = [], set()
    for url, _model in admin_urls():
        answer = support.get(url)
        content = body(answer)
        if user_data_found(seeded, content):
            problems.append(f"{url} shows {sorted(user_data_found(seeded, content))}")
        if answer.status_code == 200:
            links |= admin_links(content)
    for route in routes():
        if not route.readable:
            continue
        answer = route.read(support, seeded)
        if user_data_found(seeded, body(answer)):
            problems.append(f"{route.name} answers {sorted(user_data_found(seeded, body(answer)))}")
    for link in sorted(links):
        if support.get(link).status_code == 403:
            problems.append(f"a page links to {link}, which Support may not open")
    assert not problems, "\n".join(problems)
