"""Each framework's state as staff read it, from the session list and the session page (issue 29):
the framework named, what a session holds counted as what it is, a LangGraph thread's checkpoints
as a tree in step order, an OpenAI Agents SDK session's items as text with their JSON one click
away, a branch by its name."""

import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agentstate.tenancy.services import tenant_get_or_create
from agentstate_site.management.commands.load_demo_data import framework_sessions_create
from backends.langgraph.process import services as langgraph_services
from sessions_app.models import Session
from tests.admin.staff import login, staff
from tests.userdata_app.erasure_factories import subject_data_create

SESSIONS = reverse("admin:sessions_app_session_changelist")


@pytest.fixture
def viewer(db):
    perms = [f"sessions_app.view_{m}" for m in ("session", "langgraphthread", "langgraphcheckpoint", "message")]
    return staff("viewer", perms=perms)


@pytest.fixture
def frameworks(tenant):
    """Ada's weather chat as each framework keeps it (load_demo_data's), and a core session."""
    framework_sessions_create(tenant=tenant, user_id="ada")
    subject_data_create(tenant=tenant, user_id="bob", sessions=1, messages=3)
    return {s.session_id: s for s in Session.objects.all()}


def text(html: str) -> str:
    """What staff read: the page's text without tags, spaces run together."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def rows_of(client, **params) -> dict[str, tuple[str, str]]:
    """The session list as staff read it: session name → (framework, holds)."""
    response = client.get(SESSIONS, params)
    assert response.status_code == 200
    html = response.content.decode()
    cells = re.findall(
        r'<th class="field-session_shown">.*?>([^<]+)</a></th>.*?<td class="field-framework_shown">([^<]+)</td>'
        r'.*?<td class="field-contents">([^<]+)</td>',
        html,
        flags=re.S,
    )
    return {name: (framework, holds) for name, framework, holds in cells}


@pytest.mark.needs_backends
def test_the_session_list_names_each_framework_and_counts_what_its_sessions_hold(client, viewer, frameworks):
    login(client, viewer)
    assert rows_of(client) == {
        "adk-weather": ("Google ADK", "4 events"),
        "weather-graph": ("LangGraph", "7 checkpoints"),
        "weather-chat, branch main": ("OpenAI Agents SDK", "6 items"),
        "weather-chat, branch rome-instead": ("OpenAI Agents SDK", "6 items"),
        "s0": ("core API", "3 messages"),
    }
    assert list(rows_of(client, framework="langgraph")) == ["weather-graph"]
    assert list(rows_of(client, framework="openai_agents")) == [
        "weather-chat, branch rome-instead",
        "weather-chat, branch main",
    ]
    assert list(rows_of(client, framework="core")) == ["s0"]
    filters = text(client.get(SESSIONS).content.decode())
    assert "By framework All core API Google ADK LangGraph OpenAI Agents SDK" in filters


@pytest.mark.scale
def test_the_session_list_counts_a_page_of_every_framework_in_a_fixed_number_of_queries(client, viewer, tenant):
    login(client, viewer)
    framework_sessions_create(tenant=tenant, user_id="ada")

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(SESSIONS).status_code == 200
        return len(captured.captured_queries)

    few = queries()
    for slug in ("globex", "initech", "umbrella"):  # a LangGraph thread id is unique per tenant
        framework_sessions_create(tenant=tenant_get_or_create(slug=slug), user_id="ada")
    assert queries() == few


def test_a_langgraph_session_shows_its_checkpoints_in_step_order_with_the_fork_under_its_parent(
    client, viewer, frameworks
):
    login(client, viewer)
    thread = frameworks["weather-graph"]
    page = client.get(reverse("admin:sessions_app_session_change", args=[thread.pk])).content.decode()
    read = text(page)
    assert "Framework: LangGraph" in read and "Contains: 7 checkpoints" in read and "No checkpoints" not in read

    # Step by step; the fork (Oslo) right under the checkpoint it branched from, then the line goes on.
    timeline = read[read.index("LangGraph checkpoints") :]
    steps = re.findall(r"(?:fork from step (-?\d+) )?(-?\d+) (input|loop|update) ", timeline)
    assert steps == [
        ("", "-1", "input"),
        ("", "0", "loop"),
        ("0", "1", "update"),
        ("", "2", "loop"),
        ("", "1", "loop"),
        ("", "2", "loop"),
        ("", "3", "loop"),
    ]
    assert timeline.index('"city": "Oslo"') < timeline.index("Calling get_weather(Paris)")
    assert "run id: run-2" in timeline and "<details><summary>JSON</summary>" in page  # metadata read, raw a click away

    # The session links to its thread's page, and that page back to the session.
    thread_url = reverse("admin:sessions_app_langgraphthread_change", args=[thread.pk])
    assert f'href="{thread_url}"' in page
    thread_page = client.get(thread_url).content.decode()
    assert f'href="{reverse("admin:sessions_app_session_change", args=[thread.pk])}"' in thread_page
    assert "Thread weather-graph" in text(thread_page)


def test_a_fork_of_a_fork_is_nested_one_level_deeper(client, viewer, tenant):
    login(client, viewer)

    def put(checkpoint_id, parent, step):
        langgraph_services.checkpoint_put(
            tenant=tenant,
            thread_id="t",
            user_id="ada",
            default_user_id="ada",
            checkpoint_ns="",
            checkpoint_id=checkpoint_id,
            parent_checkpoint_id=parent,
            checkpoint={"type": "json", "data": "e30="},
            metadata={"source": "loop", "step": step},
            channel_versions={},
        )

    for checkpoint_id, parent, step in [("a", None, 0), ("b", "a", 1), ("c", "a", 1), ("d", "c", 2), ("e", "c", 2)]:
        put(checkpoint_id, parent, step)
    session = Session.objects.get(session_id__startswith="t")
    page = client.get(reverse("admin:sessions_app_session_change", args=[session.pk])).content.decode()
    depths = re.findall(r'class="depth-(\d)".*?title="(\w)"', page, flags=re.S)
    assert depths == [("0", "a"), ("1", "c"), ("2", "e"), ("1", "d"), ("0", "b")]


def test_an_openai_agents_session_shows_its_items_as_text_and_its_branches_by_name(client, viewer, frameworks):
    login(client, viewer)
    branch = frameworks["weather-chat.rome-instead"]
    page = client.get(reverse("admin:sessions_app_session_change", args=[branch.pk])).content.decode()
    read = text(page)
    assert "Framework: OpenAI Agents SDK" in read and "Contains: 6 items" in read
    assert "weather-chat, branch rome-instead · acme / ada / weather-chat.rome-instead" in read
    items = read[read.index("OpenAI Agents SDK items") :]
    assert re.search(
        r"1 user Hi, I am Ada\. JSON .*2 assistant Hello Ada! Ask me about the weather\. JSON .*"
        r"3 user What is the weather in Rome\? JSON .*"
        r'4 tool call get_weather\(\{"city": "Rome"\}\) JSON .*5 tool result get_weather → clear, 18 C JSON',
        items,
    )
    assert '{"id": "msg-1"' not in page  # no item as one line of raw JSON
    assert page.count("<details><summary>JSON</summary>") == 6
    main = reverse("admin:sessions_app_session_change", args=[frameworks["weather-chat"].pk])
    assert f'<a href="{main}">weather-chat, branch main</a>, up to message 2' in page
    branch_url = reverse("admin:sessions_app_session_change", args=[branch.pk])
    assert f'<a href="{branch_url}">weather-chat, branch rome-instead</a>' in client.get(main).content.decode()


def test_an_adk_session_names_its_framework_and_counts_its_events(client, viewer, frameworks):
    login(client, viewer)
    adk = frameworks["adk-weather"]
    read = text(client.get(reverse("admin:sessions_app_session_change", args=[adk.pk])).content.decode())
    # "Contains", not "Holds": the same page lists the legal holds on the session.
    assert "Framework: Google ADK" in read and "Contains: 4 events" in read and "Holds:" not in read
    listed = client.get(SESSIONS, {"framework": "adk"}).content.decode()
    assert re.search(r'class="column-contents">\s*<div class="text"><span>Contains</span>', listed)
    assert "get_weather" in read and "It is sunny in Paris, 21 C." in read


def test_labels_read_as_words(client, tenant, frameworks):
    """Issue 29's labels: "ADK events", "LangGraph checkpoints", "user data", no raw field names,
    no database numbers in a subject's title."""
    from django.contrib.auth import get_user_model

    from backends.langgraph.process.models import LangGraphCheckpoint
    from userdata_app import erasure

    client.force_login(get_user_model().objects.create_superuser("root"))
    index = text(client.get(reverse("admin:index")).content.decode())
    for label in ("ADK events", "LangGraph checkpoints", "LangGraph threads", "LangGraph writes", "User data"):
        assert label in index
    assert "Adk" not in index and "Lang graph" not in index and "datum" not in index
    user_data = text(client.get(reverse("admin:userdata_app_userdatum_changelist")).content.decode())
    assert "Select user data to view" in user_data
    checkpoint = LangGraphCheckpoint.objects.filter(session=frameworks["weather-graph"]).first()
    page = text(
        client.get(reverse("admin:sessions_app_langgraphcheckpoint_change", args=[checkpoint.pk])).content.decode()
    )
    assert "Channel versions:" in page and "Channel_versions" not in page
    request = erasure.erasure_request_create(subjects=[(tenant, "ada")], requested_by="ticket 7")
    assert str(request.subjects.get()) == f"A subject of erasure request {request.pk}"


def test_an_openai_agents_sessions_messages_list_and_pages_show_items_not_json_text(client, viewer, frameworks):
    """Staff arriving at the items from the message list read them as on the session page."""
    login(client, viewer)
    branch = frameworks["weather-chat.rome-instead"]
    listing = client.get(reverse("admin:sessions_app_message_changelist"), {"session__id__exact": branch.pk})
    previews = [text(c) for c in re.findall(r'<td class="field-content_preview">(.*?)</td>', listing.content.decode())]
    assert previews[:5] == [
        "user: Hi, I am Ada.",
        "assistant: Hello Ada! Ask me about the weather.",
        "user: What is the weather in Rome?",
        'tool call: get_weather({"city": "Rome"})',
        "tool result: tool → clear, 18 C",  # alone on its row, the call that named the tool is not in view
    ]
    message = listing.context["cl"].result_list[3]
    page = text(client.get(reverse("admin:sessions_app_message_change", args=[message.pk])).content.decode())
    assert '"name": "get_weather"' in page and '\\"name\\"' not in page  # the item, not its JSON text as a string
