"""Python client of agentstate: ``AgentStateClient`` (sync), ``AsyncAgentStateClient`` and the
AgentScope drop-in adapters ``RemoteStateService`` and ``RemoteSessionHistoryService``.

Needs only httpx and pydantic: it imports nothing from Django or the server's apps.
"""

from agentstate.client.agentscope import RemoteSessionHistoryService, RemoteStateService
from agentstate.client.clients import AgentStateClient, AsyncAgentStateClient
from agentstate.client.errors import (
    AgentStateError,
    AuthenticationError,
    Conflict,
    Held,
    NetworkError,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    RateLimited,
    ServerError,
    ValidationError,
)
from agentstate.client.models import (
    Checkpoint,
    HistoryEdit,
    MemoryHit,
    MessageHit,
    MessageRecord,
    Page,
    Round,
    RunUsage,
    SessionRecord,
    SessionRestore,
    Transition,
    UserDatum,
)

__all__ = [
    "AgentStateClient",
    "AgentStateError",
    "AsyncAgentStateClient",
    "AuthenticationError",
    "Checkpoint",
    "Conflict",
    "Held",
    "HistoryEdit",
    "MemoryHit",
    "MessageHit",
    "MessageRecord",
    "NetworkError",
    "NotFound",
    "Page",
    "PermissionDenied",
    "PreconditionFailed",
    "RateLimited",
    "RemoteSessionHistoryService",
    "RemoteStateService",
    "Round",
    "RunUsage",
    "ServerError",
    "SessionRecord",
    "SessionRestore",
    "Transition",
    "UserDatum",
    "ValidationError",
]
