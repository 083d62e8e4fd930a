"""Who saw what (issue 41): a read of declared people's data by staff or a compliance key is an
access-log entry wherever it happens. The URL configuration and the admin registry are walked
(``tests.surfaces``): each route whose view says its answers carry people's data (``reads``,
checked against the map by the system check agentstate.E003) logs a staff login's read and a
compliance key's, and no route or admin page answers with a seeded marker without an entry."""

import pytest
from django.contrib.auth import get_user_model
from django.core import checks
from django.test import Client
from rest_framework.test import APIClient

from agentstate.api.views import check_reads_declared
from agentstate.tenancy.services import api_key_create
from tests.surfaces import SUBJECT, Route, admin_urls, routes, seed
from userdata_app.access_log.chain import ROSTER, chain_verify
from userdata_app.access_log.models import AccessEntry
from userdata_app.erasure.registry import subject_hash

pytestmark = pytest.mark.django_db

# The staff reads through the API the finding named (issue 41, finding 3).
FOUND_UNLOGGED = (
    "compliance-subject-export",
    "compliance-subject-export-portable",
    "user-data-list",
    "user-datum",
    "message-list",
    "memory-search",
    "adk-user-state",
    "adk-artifact-content",
)


@pytest.fixture
def seeded(api, tenant):
    return seed(api)


@pytest.fixture
def officer(db):
    user = get_user_model().objects.create_superuser("officer", password="pw-officer-123")
    client = Client()
    client.force_login(user)
    return client


def tenants_entries():
    """The tenants' chains, not the roster that records each chain's beginning."""
    return AccessEntry.objects.exclude(tenant=ROSTER)


def entries() -> int:
    return tenants_entries().count()


def staff_read(client, route: Route, seeded) -> tuple[object, list[AccessEntry]]:
    before = entries()
    answer = route.read(client, seeded)
    return answer, list(tenants_entries().order_by("seq")[before:])


def test_every_routed_view_says_what_peoples_data_its_answers_carry():
    assert check_reads_declared() == []
    assert all(route.reads is not None for route in routes() if route.is_api)


def test_a_view_that_says_nothing_fails_the_check(monkeypatch):
    from userdata_app.api.views import UserDataListView

    monkeypatch.setattr(UserDataListView, "reads", None)
    (error,) = check_reads_declared()
    assert isinstance(error, checks.Error) and error.id == "agentstate.E003" and "UserDataListView" in error.msg


def test_a_staff_login_reading_peoples_data_through_the_api_is_logged(officer, seeded, tenant):
    digest = subject_hash(tenant_slug=tenant.slug, user_id=SUBJECT)[1]
    for route in (route for route in routes() if route.name in FOUND_UNLOGGED):
        answer, logged = staff_read(officer, route, seeded)

        assert answer.status_code == 200, route.name
        (entry,) = logged
        assert (entry.actor, entry.action, entry.subject_hash) == ("officer", "api", digest), route.name
        assert entry.detail["route"] == route.name and entry.detail["status"] == 200
    assert chain_verify(tenant=tenant.slug).ok


def test_a_staff_call_that_reads_no_ones_data_is_not_logged(officer, seeded):
    (route,) = [route for route in routes() if route.name == "adk-app-state"]

    answer, logged = staff_read(officer, route, seeded)

    assert answer.status_code == 200 and logged == []


@pytest.mark.slow
def test_every_route_that_answers_with_peoples_data_logs_each_staff_and_compliance_read(officer, seeded, tenant):
    """Every route of the URL configuration, read as a staff login and with a compliance key: a
    route that says it reads people's data answers them and writes an entry; a route that says
    nothing answers no marker of the seed."""
    key = api_key_create(tenant=tenant, name="dpo", scope="compliance")[1]
    compliance = APIClient()
    compliance.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    problems = []
    for route in (route for route in routes() if route.readable):
        answer, logged = staff_read(officer, route, seeded)
        content = b"".join(answer.streaming_content) if answer.streaming else answer.content
        if answer.status_code >= 500:
            problems.append(f"{route.name}: {answer.status_code}")
        elif route.reads:
            if answer.status_code != 200:
                problems.append(f"{route.name}: {answer.status_code} (give it a read in tests.surfaces.QUERIES)")
            if not [entry for entry in logged if entry.actor == "officer" and entry.detail["route"] == route.name]:
                problems.append(f"{route.name}: a staff read was not logged")
        elif seeded.found(content):
            problems.append(f"{route.name} answers {sorted(seeded.found(content))} but says it reads nothing")
        if route.is_api:
            before = entries()
            route.read(compliance, seeded, tenant=False)
            if entries() == before:
                problems.append(f"{route.name}: a compliance key's call was not logged")
    assert not problems, "\n".join(problems)
    assert chain_verify(tenant=tenant.slug).ok


@pytest.mark.slow
def test_every_admin_page_that_shows_peoples_data_is_logged(officer, seeded, tenant):
    """Every page of every registered admin (``get_urls``: lists, records, custom pages) opened by
    a superuser: a page of a declared model, or any page that shows a marker of the seed, writes
    an entry."""
    from agentstate import subject_data

    problems = []
    for url, model in admin_urls():
        before = entries()
        answer = officer.get(url)
        if answer.status_code >= 500:
            problems.append(f"{url}: {answer.status_code}")
            continue
        content = b"".join(answer.streaming_content) if answer.streaming else answer.content
        logged = entries() > before
        declared = model is not None and subject_data.declaration_of(model) is not None
        is_record_page = answer.status_code == 200 and url.rstrip("/").rsplit("/", 1)[-1].isdigit()
        if seeded.found(content) and not logged:
            problems.append(f"{url} shows {sorted(seeded.found(content))} and logged nothing")
        elif declared and is_record_page and not logged:
            problems.append(f"{url}: a record of {model._meta.label} opened and logged nothing")
    assert not problems, "\n".join(problems)
