"""What an erasure's scope covers, in the kinds of the map of people's data (``agentstate.subject_data``)."""

from agentstate.subjects import PROCESS_STATE, USER_DATA
from userdata_app.models import ErasureRequest


def kinds_in_scope(scope: str) -> tuple[str, ...]:
    """User data for either scope; process state too for "everything"."""
    return (USER_DATA, PROCESS_STATE) if scope == ErasureRequest.Scope.EVERYTHING else (USER_DATA,)
