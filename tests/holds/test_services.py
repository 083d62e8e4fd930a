"""A hold check outside the transaction that deletes is a programming error, refused at once: the
hold lock would end with its own statement, and a hold placed before the delete would not be seen."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.transaction import TransactionManagementError

from agentstate.holds import services as holds
from agentstate.subject_data import rows_hold_check
from userdata_app.models import UserDatum

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "check",
    [
        lambda tenant: holds.hold_check(tenant_pk=tenant.pk, user_id="u1"),
        lambda tenant: holds.holds_lock(tenant_pk=tenant.pk, exclusive=False),
        lambda tenant: rows_hold_check(UserDatum.objects.all(), tenant_pk=tenant.pk, what="x"),
    ],
    ids=["hold_check", "holds_lock", "rows_hold_check"],
)
def test_a_hold_check_outside_a_transaction_is_refused_at_once(tenant, check):
    with pytest.raises(TransactionManagementError, match="inside the transaction that deletes"):
        check(tenant)
    with transaction.atomic():
        check(tenant)  # inside one, it checks
