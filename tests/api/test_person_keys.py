"""API keys scoped to one person (issue 46, "One person per credential"): made by create_api_key
--user and in the admin; on every route of the URL configuration such a key serves its own
person's data only, or refuses (403 naming the rule, or 404); a route nobody classified fails
here; a tenant key is unchanged (tests/api/test_cross_tenant.py and the rest of the suite)."""

import json
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from agentstate import subject_data
from agentstate.tenancy.models import APIKey
from agentstate.tenancy.services import api_key_create
from backends.langgraph.process.models import LangGraphCheckpoint, LangGraphThread
from backends.langgraph.process.services import thread_key
from sessions_app.models import Session
from tests.api.assertions import assert_error
from tests.api.cross_tenant import CASES
from tests.surfaces import routes
from userdata_app.memory.models import MemoryItem

pytestmark = pytest.mark.django_db

OTHER, OWN = "u1", "me"  # the victim fixture's person, and the key's
MARKERS = ("secret", "mine", "me@example.com", "adk-of-u1", "thread-of-u1", f'"{OTHER}"')  # their id, as a JSON string
# 403 naming the rule; 2xx with nothing of the other person's; 404, as for an id no one has
REFUSED, SERVED, NOT_FOUND = "refused", "served", "not found"

ADK = "/api/v1/adk/apps/app/"
LG = "/api/v1/langgraph/"
THREAD = {"thread_id": "thread-of-u1", "checkpoint_ns": "", "checkpoint_id": "c1", "default_user_id": OWN}
READ = "channel_values=separate&checkpoint_ns="  # what the saver's reads send
TYPED = {"type": "json", "data": "e30="}

# (route name, method, path, body, outcome) for what cross_tenant.CASES does not name another
# person in: the lists across people, the framework routes, the tenant-wide ones.
EXTRA = [
    ("session-list", "get", f"/api/v1/sessions/?user_id={OTHER}", None, REFUSED),
    ("adk-session-list", "get", ADK + "sessions/", None, SERVED),
    ("adk-session-list", "get", ADK + f"sessions/?user_id={OTHER}", None, REFUSED),
    ("adk-app-state", "get", ADK + "state/", None, SERVED),  # app: state is no one's
    ("adk-session-create", "post", ADK + f"users/{OTHER}/sessions/", {"session_id": "a2"}, REFUSED),
    ("adk-user-state", "get", ADK + f"users/{OTHER}/state/", None, REFUSED),
    ("adk-session-detail", "get", ADK + f"users/{OTHER}/sessions/a1/", None, REFUSED),
    ("adk-session-detail", "delete", ADK + f"users/{OTHER}/sessions/a1/", None, REFUSED),
    ("adk-event-list", "get", ADK + f"users/{OTHER}/sessions/a1/events/?cursor=x", None, REFUSED),
    ("adk-event-list", "post", ADK + f"users/{OTHER}/sessions/a1/events/", {"event": "{}"}, REFUSED),
    ("compliance-retention-policy", "get", "/api/v1/compliance/retention/", None, REFUSED),
    ("compliance-subject-export", "get", f"/api/v1/compliance/users/{OTHER}/export/", None, REFUSED),
    ("compliance-subject-export-portable", "get", f"/api/v1/compliance/users/{OTHER}/export/portable/", None, REFUSED),
    ("compliance-subject-export", "get", f"/api/v1/compliance/users/{OWN}/export/", None, REFUSED),
    ("langgraph-checkpoint-list", "get", LG + f"checkpoints/?{READ}", None, SERVED),
    ("langgraph-checkpoint", "get", LG + f"checkpoint/?{READ}&thread_id=thread-of-u1", None, NOT_FOUND),
    ("langgraph-checkpoint-list", "get", LG + f"checkpoints/?{READ}&user_id={OTHER}", None, REFUSED),
    (
        "langgraph-checkpoint-list",
        "post",
        LG + "checkpoints/",
        {**THREAD, "user_id": OTHER, "checkpoint": TYPED, "metadata": {}, "channel_versions": {}},
        REFUSED,
    ),
    ("langgraph-checkpoint", "get", LG + f"checkpoint/?{READ}&thread_id=thread-of-u1&user_id={OTHER}", None, REFUSED),
    ("langgraph-writes", "post", LG + "writes/", {**THREAD, "user_id": OTHER, "task_id": "t", "writes": []}, REFUSED),
    (
        "langgraph-batch",
        "post",
        LG + "batch/",
        {"calls": [{"path": "writes", "body": {**THREAD, "user_id": OTHER, "task_id": "t", "writes": []}}]},
        REFUSED,
    ),
    ("langgraph-thread-delete", "post", LG + "threads/delete/", {"thread_id": "thread-of-u1"}, SERVED),
    ("langgraph-thread-delete", "post", LG + "threads/delete/", {"thread_id": "t", "user_id": OTHER}, REFUSED),
    (
        "langgraph-thread-copy",
        "post",
        LG + "threads/copy/",
        {"source_thread_id": "thread-of-u1", "target_thread_id": "mine"},
        SERVED,
    ),
    ("langgraph-prune", "post", LG + "threads/prune/", {"thread_ids": ["thread-of-u1"], "strategy": "delete"}, SERVED),
    ("langgraph-prune", "post", LG + "threads/prune/", {"thread_ids": [], "user_id": OTHER}, REFUSED),
    ("langgraph-runs-delete", "post", LG + "runs/delete/", {"run_ids": ["r1"]}, SERVED),
    (
        "store-batch",
        "post",
        "/api/v1/store/batch/",
        {"ops": [{"op": "search", "namespace_prefix": ["users"]}, {"op": "list_namespaces"}]},
        SERVED,
    ),
    ("store-batch", "post", "/api/v1/store/batch/", {"ops": [], "user_id": OTHER}, REFUSED),
    ("api-key", "get", "/api/v1/key/", None, SERVED),  # the key's own tenant, scope and person
]
# cross_tenant.CASES name the other person in their path or body; a list that names no one is narrowed.
TABLE = [
    (name, method, path, body, SERVED if name == "session-list" and method == "get" else REFUSED)
    for name, method, path, body, _ in CASES
] + EXTRA


def person_client(user_id: str, scope: str = "agent") -> APIClient:
    from agentstate.tenancy.models import Tenant

    key = api_key_create(tenant=Tenant.objects.get(slug="acme"), name="person", scope=scope, user_id=user_id)[1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


@pytest.fixture
def two_people(victim, tenant, api):
    """The victim fixture's person (u1, with one of everything, an ADK session and a LangGraph
    thread) and the key's own person (a session, a memory, a LangGraph thread)."""
    event = {"id": "e1", "invocation_id": "i1", "author": "user", "timestamp": 1.0}
    event["content"] = {"role": "user", "parts": [{"text": "adk-of-u1"}]}
    assert api.post(ADK + f"users/{OTHER}/sessions/", {"session_id": "a1"}, format="json").status_code == 201
    answer = api.post(ADK + f"users/{OTHER}/sessions/a1/events/", {"event": json.dumps(event)}, format="json")
    assert answer.status_code == 201, answer.content
    for user_id, thread in ((OTHER, "thread-of-u1"), (OWN, "thread-of-me")):
        session = Session.objects.create(tenant=tenant, user_id=user_id, session_id=thread, framework="langgraph")
        owned = {"session": session, "tenant": tenant, "user_id": user_id}
        LangGraphThread.objects.create(**owned, thread_id=thread, thread_key=thread_key(thread))
        LangGraphCheckpoint.objects.create(
            **owned, checkpoint_id="c1", run_id="r1", value_type="json", value=thread.encode()
        )
    assert api.post("/api/v1/sessions/", {"user_id": OWN, "session_id": "s9"}, format="json").status_code == 201
    mine = {"op": "put", "namespace": ["users", OWN, "facts"], "key": "k", "value": {"own": "note"}}
    assert api.post("/api/v1/store/batch/", {"ops": [mine]}, format="json").status_code == 200


def held_of(user_id: str) -> list:
    """Every row of ``user_id`` in every declared model: what no call may change."""
    return [
        sorted(map(repr, d.model._default_manager.filter(user_id=user_id).values()))
        for d in subject_data.declared()
        if any(f.name == "user_id" for f in d.model._meta.fields)
    ]


def content(response) -> str:
    return (b"".join(response.streaming_content) if response.streaming else response.content).decode()


def test_the_table_classifies_every_route_and_method_of_the_url_configuration():
    """A new route, or a new method on one, fails here until someone says what a person key gets."""
    walked = {
        (route.name, method)
        for route in routes()
        if route.is_api
        for method in route.view_class.http_method_names
        if method not in ("head", "options") and hasattr(route.view_class, method)
    }
    assert walked == {(name, method) for name, method, *_ in TABLE}


def test_a_view_that_does_not_say_where_it_names_a_person_fails_the_check(monkeypatch):
    from agentstate.api.views import check_person_declared
    from userdata_app.api.views import UserDataListView

    assert check_person_declared() == []
    monkeypatch.setattr(UserDataListView, "person_named_in", None)
    (error,) = check_person_declared()
    assert error.id == "agentstate.E004" and "UserDataListView" in error.msg


def walk(cases, two_people) -> list[str]:
    client = person_client(
        OWN, scope="compliance"
    )  # compliance: the compliance routes refuse the person, not the scope
    problems = []
    for name, method, path, body, outcome in cases:
        before = held_of(OTHER)
        call = getattr(client, method)
        response = call(path, body, format="json") if body is not None else call(path)
        text = content(response)
        if outcome == REFUSED and not (response.status_code == 403 and '"person_key"' in text):
            problems.append(f"{method} {name}: {response.status_code} {text[:200]}, not refused")
        if outcome == NOT_FOUND and response.status_code != 404:
            problems.append(f"{method} {name}: {response.status_code} {text[:200]}, not 404")
        if outcome == SERVED and response.status_code >= 300:
            problems.append(f"{method} {name}: {response.status_code} {text[:200]}, not served")
        if any(marker in text for marker in MARKERS):
            problems.append(f"{method} {name} answers the other person's data: {text[:200]}")
        if held_of(OTHER) != before:
            problems.append(f"{method} {name} changed the other person's data")
    return problems


QUICK = ["session-list", "session-detail", "store-batch", "compliance-retention-policy"]


def test_a_person_key_is_refused_on_another_persons_data(two_people):
    """The quick loop's few routes, one of each kind; the walk of every route is below (slow)."""
    problems = walk([case for case in TABLE if case[0] in QUICK], two_people)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_on_every_route_a_person_key_serves_its_person_only_or_refuses(two_people):
    problems = walk(TABLE, two_people)
    assert not problems, "\n".join(problems)


def test_a_person_key_reaches_its_own_person(two_people):
    client = person_client(OWN)
    listed = client.get("/api/v1/sessions/").json()["results"]
    assert {s["user_id"] for s in listed} == {OWN}
    assert client.get(f"/api/v1/users/{OWN}/sessions/s9/").status_code == 200
    assert client.put(f"/api/v1/users/{OWN}/data/email/", {"value": "x@example.com"}, format="json").status_code == 200
    found = client.post("/api/v1/store/batch/", {"ops": [{"op": "search", "namespace_prefix": []}]}, format="json")
    assert [item["value"] for item in found.json()["results"][0]] == [{"own": "note"}]
    threads = client.get(f"/api/v1/langgraph/checkpoints/?{READ}").json()["results"]
    assert [t["thread_id"] for t in threads] == ["thread-of-me"]
    assert client.get(f"/api/v1/langgraph/checkpoint/?{READ}&thread_id=thread-of-me").status_code == 200
    created = client.post("/api/v1/sessions/", {"session_id": "s10"}, format="json")  # names no one: the key's person
    assert created.status_code == 201 and created.json()["user_id"] == OWN
    # Another person's session id under the key's own person is no session of theirs: 404, as any unknown one.
    assert_error(client.get(f"/api/v1/users/{OWN}/sessions/s1/"), 404, "not_found")


def test_a_person_key_is_refused_with_the_rule_named(two_people):
    error = assert_error(person_client(OWN).get(f"/api/v1/users/{OTHER}/data/"), 403, "person_key", "user_id")
    assert "one person" in error["message"]
    # The same answer for a person with no data at all: it tells nothing about who exists.
    assert (
        person_client(OWN).get("/api/v1/users/nobody/data/").json()
        == person_client(OWN).get(f"/api/v1/users/{OTHER}/data/").json()
    )


def test_a_tenant_key_still_reaches_every_person(two_people, api):
    users = {s["user_id"] for s in api.get("/api/v1/sessions/").json()["results"]}
    assert {OTHER, OWN} <= users


# --- Making person keys ----------------------------------------------------------------------------


def test_create_api_key_user_makes_a_key_for_that_person_kept_as_typed(db):
    out = StringIO()
    err = StringIO()
    call_command("create_api_key", "--tenant", "acme", "--name", "agent", "--user", " alice ", stdout=out, stderr=err)
    api_key = APIKey.objects.get(name="agent")
    assert api_key.user_id == " alice " and "' alice '" in err.getvalue()
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=out.getvalue().strip())
    assert client.get("/api/v1/users/%20alice%20/data/").status_code == 200
    assert_error(client.get("/api/v1/users/alice/data/"), 403, "person_key")


def test_create_api_key_refuses_a_user_id_that_is_no_identifier(db):
    with pytest.raises(CommandError, match="user"):
        call_command("create_api_key", "--tenant", "acme", "--name", "k", "--user", "a\x00b", stdout=StringIO())
    assert not APIKey.objects.exists()


def test_the_admin_makes_a_person_key_and_keeps_its_person(tenant):
    client = APIClient()
    client.force_login(User.objects.create_superuser("root", password="pw-root-123"))
    response = client.post(
        "/admin/tenancy/apikey/add/",
        {"name": "p", "tenant": tenant.pk, "scope": "agent", "user_id": "bob"},
        follow=True,
    )
    assert response.status_code == 200
    api_key = APIKey.objects.get(name="p")
    assert api_key.user_id == "bob"
    change = client.get(f"/admin/tenancy/apikey/{api_key.pk}/change/").content.decode()
    assert 'name="user_id"' not in change  # fixed once made


def test_an_erasure_of_the_person_deletes_their_keys(tenant):
    from tests.userdata_app.erasure_factories import verified_request
    from userdata_app.erasure import erasure_execute

    api_key_create(tenant=tenant, name="p", user_id="gone")
    api_key_create(tenant=tenant, name="tenant-wide")
    erasure_execute(request=verified_request(subjects=[(tenant, "gone")], scope="everything"))
    assert list(APIKey.objects.values_list("name", flat=True)) == ["tenant-wide"]


def test_a_key_reads_its_own_tenant_scope_and_person(two_people, api):
    mine = person_client(OWN).get("/api/v1/key/")
    assert mine.json() == {"tenant": "acme", "scope": "agent", "user_id": OWN}
    assert api.get("/api/v1/key/").json() == {"tenant": "acme", "scope": "agent", "user_id": None}


def test_a_compliance_person_keys_reads_are_in_the_access_log_under_its_person(two_people, tenant):
    from userdata_app.access_log.chain import ROSTER
    from userdata_app.access_log.models import AccessEntry
    from userdata_app.erasure.registry import subject_hash

    entries = AccessEntry.objects.exclude(tenant=ROSTER)  # the tenant's chain, not the roster of chains
    before = entries.count()
    assert person_client(OWN, scope="compliance").get("/api/v1/sessions/").status_code == 200
    (entry,) = entries.order_by("seq")[before:]
    assert entry.detail["route"] == "session-list"
    assert entry.subject_hash == subject_hash(tenant_slug=tenant.slug, user_id=OWN)[1]  # the list, narrowed to them


def test_a_person_key_puts_under_its_own_person_at_the_owner_position(two_people):
    """A store that names its owner's position (``AgentStateStore(owner=1)``) works with a person
    key for that person; naming another person there is refused, nothing written."""
    client = person_client(OWN)
    mine = {"op": "put", "namespace": ["memories", OWN], "key": "k", "value": {"v": 1}, "owner": 1}
    assert client.post("/api/v1/store/batch/", {"ops": [mine]}, format="json").status_code == 200
    theirs = {**mine, "namespace": ["memories", OTHER]}
    answer = client.post("/api/v1/store/batch/", {"ops": [mine, theirs]}, format="json")
    assert_error(answer, 403, "person_key", "ops[1].namespace")
    assert MemoryItem.objects.filter(namespace=f"memories.{OTHER}").count() == 0
