"""What the service holds about a subject, per category, as erasure counts it (``agentstate.subject_data``)."""

from agentstate import subject_data
from agentstate.subjects import PROCESS_STATE


def held(*, tenant, user_id: str, kinds: tuple[str, ...] = subject_data.KINDS) -> dict[str, int]:
    """Rows per category of these kinds (default: every kind) held about the subject right now."""
    return subject_data.subject_counts(tenant=tenant, user_id=user_id, kinds=kinds)


def process_state_held(*, tenant, user_id: str) -> dict[str, int]:
    return held(tenant=tenant, user_id=user_id, kinds=(PROCESS_STATE,))
