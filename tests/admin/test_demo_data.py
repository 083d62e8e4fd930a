"""load_demo_data gives a new user something to browse."""
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Session
from userdata_app.models import ErasureRequest, UserDatum


@pytest.mark.django_db
def test_load_demo_data_fills_tenants_sessions_history_and_requests_once():
    call_command("load_demo_data", "--users", "1", stdout=None)
    sessions = Session.objects.all()
    assert {s.tenant.slug for s in sessions} == {"demo-acme", "demo-globex", "demo-initech"}
    assert all(s.message_count >= 100 for s in sessions)
    assert UserDatum.objects.count() == 9 and ErasureRequest.objects.count() == 2
    with pytest.raises(CommandError):
        call_command("load_demo_data", stdout=None)
