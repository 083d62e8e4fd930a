"""Every API endpoint and method with what another tenant's key gets from it, and a snapshot of a
tenant's rows to compare before and after (the ``victim`` fixture in the root conftest.py fills them)."""

from backends.adk.people.artifacts.models import Artifact
from sessions_app.models import AgentTransition, Checkpoint, Message, Round, RunUsage, Session
from userdata_app.memory.models import MemoryItem
from userdata_app.models import UserDatum

S = "/api/v1/users/u1/sessions/s1/"
A = "/api/v1/adk/apps/app/users/u1/artifacts/"
NOTE = "filename=note.txt&session_id=s1"
NOT_FOUND, EMPTY, OWN, NOTHING = "404", "empty list", "own tenant", "nothing done"

# (route name, method, path, body, what the other tenant gets)
CASES = [
    ("session-list", "get", "/api/v1/sessions/", None, EMPTY),
    ("session-list", "post", "/api/v1/sessions/", {"user_id": "u1", "session_id": "s1"}, OWN),
    ("session-detail", "get", S, None, NOT_FOUND),
    ("session-detail", "patch", S, {"metadata": {"owned": True}}, NOT_FOUND),
    ("session-detail", "delete", S, None, NOT_FOUND),
    ("session-end", "post", S + "end/", None, NOT_FOUND),
    ("session-restore", "get", S + "restore/", None, NOT_FOUND),
    ("message-list", "get", S + "messages/", None, NOT_FOUND),
    ("message-list", "post", S + "messages/", {"content": "injected"}, NOT_FOUND),
    ("message-pop", "post", S + "messages/pop/", {"idempotency_key": "k"}, NOT_FOUND),
    ("message-rewind", "post", S + "messages/rewind/", {"after_seq": 0, "after_round": 0}, NOT_FOUND),
    ("message-clear", "post", S + "messages/clear/", None, NOT_FOUND),
    ("session-fork", "post", S + "fork/", {"new_session_id": "stolen"}, NOT_FOUND),
    ("round-list", "get", S + "rounds/", None, NOT_FOUND),
    ("round-list", "post", S + "rounds/", {"state": {"owned": True}, "round_id": 1}, OWN),
    ("round-latest", "get", S + "rounds/latest/", None, NOT_FOUND),
    ("round-detail", "get", S + "rounds/1/", None, NOT_FOUND),
    ("round-detail", "put", S + "rounds/1/", {"state": {"owned": True}}, OWN),
    ("round-detail", "delete", S + "rounds/1/", None, NOT_FOUND),
    ("checkpoint-list", "get", S + "checkpoints/", None, NOT_FOUND),
    ("checkpoint-list", "post", S + "checkpoints/", {"label": "cp"}, NOT_FOUND),
    ("checkpoint-latest", "get", S + "checkpoints/latest/?label=cp", None, NOT_FOUND),
    ("working-state", "get", S + "working-state/", None, NOT_FOUND),
    ("working-state", "put", S + "working-state/", {"owned": True}, NOT_FOUND),
    ("working-state", "patch", S + "working-state/", {"owned": True}, NOT_FOUND),
    ("working-state", "delete", S + "working-state/", None, NOT_FOUND),
    ("transition-list", "get", S + "transitions/", None, NOT_FOUND),
    ("transition-list", "post", S + "transitions/", {"to_agent": "evil"}, NOT_FOUND),
    ("run-usage-list", "get", S + "usage/", None, NOT_FOUND),
    ("run-usage-list", "post", S + "usage/", {"turn": 1, "total_tokens": 9}, NOT_FOUND),
    ("message-search", "get", "/api/v1/users/u1/messages/search/?q=secret", None, EMPTY),
    ("user-data-list", "get", "/api/v1/users/u1/data/", None, EMPTY),
    ("user-datum", "get", "/api/v1/users/u1/data/email/", None, NOT_FOUND),
    ("user-datum", "put", "/api/v1/users/u1/data/email/", {"value": "evil@example.com"}, OWN),
    ("user-datum", "delete", "/api/v1/users/u1/data/email/", None, NOT_FOUND),
    ("memory-search", "get", "/api/v1/users/u1/memories/search/?q=secret", None, EMPTY),
    (
        "store-batch",
        "post",
        "/api/v1/store/batch/",
        {"ops": [{"op": "put", "namespace": ["users", "u1", "facts"], "key": "food", "value": {"owned": True}}]},
        OWN,
    ),
    ("adk-artifact-list", "get", A + "?session_id=s1", None, EMPTY),
    ("adk-artifact-list", "post", A, {"filename": "note.txt", "session_id": "s1", "artifact": {"text": "evil"}}, OWN),
    ("adk-artifact-list", "delete", A + "?" + NOTE, None, NOTHING),  # ADK: deleting a missing artifact is no error
    ("adk-artifact-versions", "get", A + "versions/?" + NOTE, None, EMPTY),
    ("adk-artifact-load", "get", A + "load/?" + NOTE, None, NOT_FOUND),
    ("adk-artifact-content", "get", A + "content/?" + NOTE, None, NOT_FOUND),
]


def snapshot(tenant):
    from sessions_app import selectors

    session = Session.objects.get(tenant=tenant)  # a fork would be a second session
    return {
        "session": (session.metadata, session.ended_at, session.version, session.last_seq, session.history_generation),
        "messages": list(Message.objects.filter(tenant=tenant).values_list("seq", "content")),
        "rounds": list(Round.objects.filter(tenant=tenant).values_list("round_id", "state", "version")),
        "checkpoints": Checkpoint.objects.filter(tenant=tenant).count(),
        "transitions": AgentTransition.objects.filter(tenant=tenant).count(),
        "run_usage": list(RunUsage.objects.filter(tenant=tenant).values_list("turn", "total_tokens")),
        "working_state": selectors.working_state_get(session=session),
        "user_data": list(UserDatum.objects.filter(tenant=tenant).values_list("key", "value")),
        "memories": list(MemoryItem.objects.filter(tenant=tenant).values_list("namespace", "key", "value")),
        "artifacts": list(Artifact.objects.filter(tenant=tenant).values_list("filename", "version", "content")),
    }
