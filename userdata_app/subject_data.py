"""User-attributed data in the map of people's data (``agentstate.subject_data``)."""

from __future__ import annotations

from agentstate.subject_data import Export, Portable, SubjectData, register, register_not_personal
from agentstate.subjects import USER_DATA
from agentstate.validation import clean_identifier
from userdata_app.models import UserDatum
from userdata_app.selectors import subject_user_data_export


def declare() -> None:
    """Register user data (called from ``UserdataAppConfig.ready``)."""
    register(
        SubjectData(
            model=UserDatum,
            category="user_data",
            kind=USER_DATA,
            # A key set again since an erasure holds only the new value: re-applying it keeps it.
            existed="updated_at",
            export=Export("user_data", subject_user_data_export),
            portable=Portable(
                "user_datum", order=("user_id", "key"), key=("user_id", "key"), checks={"key": clean_identifier}
            ),
        ),
    )
    register_not_personal(
        "userdata_app.ErasureSubject",
        "the erasure request's own record of whom it is about: executing it replaces the id by a keyed hash",
    )
    register_not_personal(
        "userdata_app.AccessSubject",
        "the access request's own record of whom its export was about, kept as evidence that the request was answered",
    )
