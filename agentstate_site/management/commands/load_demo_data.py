"""Fill the database with a realistic demo data set so a new user has something to browse:
several tenants and users, sessions with hundreds of messages spread over the last 30 days,
rounds, checkpoints, transitions, working state, user data and two erasure requests; and one user's
state as each framework keeps it: a Google ADK session with a tool call, a LangGraph thread with a
fork, an OpenAI Agents SDK session with a tool call and a branch (as their examples/ would write it).

Everything is written through the services (so it obeys their rules), then each session's times
are set to a believable timeline: a conversation of replies seconds apart and questions minutes
apart, with rounds, the checkpoint and the hand-off at their moment in it, ``updated_at`` its last
activity and ``ended_at`` shortly after, all in the past; some live sessions were active minutes
ago, so "active sessions today" has something to show. The services would stamp the load time."""

import base64
import json
import random
import time
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from agentstate.tenancy.models import Tenant
from agentstate.tenancy.services import tenant_get_or_create
from backends.adk.process import services as adk_services
from backends.langgraph.process import services as langgraph_services
from sessions_app import services
from sessions_app.models import AgentTransition, Checkpoint, Message, Round, Session
from userdata_app import erasure
from userdata_app import services as userdata_services

TENANTS = ("demo-acme", "demo-globex", "demo-initech")
AGENTS = ("planner", "researcher", "writer", "support-bot")
WORKSPACES = ("default", "sales", "research")
USER_LINES = (
    "Can you summarise the last quarter's numbers?",
    "Draft a reply to the customer about the delay.",
    "What changed in the API since version 2?",
    "Book a meeting with the design team next week.",
    "Find the three cheapest flights to Lisbon.",
    "Explain this stack trace to me.",
)
ASSISTANT_LINES = (
    "Here is a short summary with the key figures.",
    "I drafted a reply; tell me if the tone is right.",
    "Three endpoints changed; the rest is backwards compatible.",
    "Tuesday 10:00 works for everyone.",
    "I found three options under 200 EUR.",
    "The error comes from a missing migration.",
)


class Command(BaseCommand):
    help = "Load a demo data set (tenants demo-acme, demo-globex, demo-initech) for browsing the admin."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--users", type=int, default=4, help="Users per tenant (default 4).")
        parser.add_argument("--seed", type=int, default=7, help="Random seed, for a reproducible data set.")

    def handle(self, *args: Any, users: int, seed: int, **options: Any) -> None:
        if Tenant.objects.filter(slug__in=TENANTS).exists():
            raise CommandError("Demo data is already loaded (tenants demo-*). Use a fresh database to load it again.")
        rng = random.Random(seed)  # noqa: S311 (seeded for a reproducible demo set: no secret)
        now = timezone.now()
        totals = {"sessions": 0, "messages": 0}
        with transaction.atomic():
            for slug in TENANTS:
                tenant = tenant_get_or_create(slug=slug)
                for n in range(users):
                    user_id = f"user-{n + 1:03d}"
                    for s in range(rng.randint(1, 3)):
                        totals["messages"] += self._session(rng, tenant, user_id, f"chat-{s + 1}", now)
                        totals["sessions"] += 1
                    userdata_services.user_datum_set(
                        tenant=tenant, user_id=user_id, key="email", value=f"{user_id}@{slug}.example"
                    )
                    userdata_services.user_datum_set(
                        tenant=tenant, user_id=user_id, key="name", value=f"Demo User {n + 1}"
                    )
                    userdata_services.user_datum_set(
                        tenant=tenant,
                        user_id=user_id,
                        key="preferences",
                        value={"language": rng.choice(["en", "de", "fr"]), "tone": rng.choice(["brief", "detailed"])},
                    )
            acme = Tenant.objects.get(slug=TENANTS[0])
            erasure.erasure_request_create(
                subjects=[(acme, "user-001")],
                scope="everything",
                requested_by="demo ticket 1001",
                received_at=now - timedelta(days=40),
            )
            verified = erasure.erasure_request_create(subjects=[(acme, "user-002")], requested_by="demo ticket 1002")
            erasure.erasure_request_verify(request=verified, identity_check="reply from the account's e-mail address")
            framework_sessions_create(tenant=acme, user_id="ada")
        self.stdout.write(
            self.style.SUCCESS(
                f"Loaded {len(TENANTS)} tenants, {len(TENANTS) * users} users, {totals['sessions']} sessions, "
                f"{totals['messages']} messages, 2 erasure requests and one session of each framework (user ada)."
            )
        )

    def _session(self, rng: random.Random, tenant, user_id: str, session_id: str, now) -> int:
        session = services.session_create(
            tenant=tenant,
            user_id=user_id,
            session_id=session_id,
            agent_id=rng.choice(AGENTS),
            workspace_id=rng.choice(WORKSPACES),
            metadata={"channel": rng.choice(["web", "slack", "api"])},
        )
        count = rng.randint(100, 400)
        for start in range(0, count, services.MAX_MESSAGES_PER_APPEND):
            services.message_append(
                session=session,
                messages=[
                    {"role": "user", "content": rng.choice(USER_LINES)}
                    if i % 2 == 0
                    else {
                        "role": "assistant",
                        "name": session.agent_id,
                        "content": [{"type": "text", "text": rng.choice(ASSISTANT_LINES)}],
                        "usage": {"input_tokens": rng.randint(50, 900), "output_tokens": rng.randint(20, 400)},
                    }
                    for i in range(start, min(count, start + services.MAX_MESSAGES_PER_APPEND))
                ],
            )
        rounds = rng.randint(3, 10)
        for r in range(rounds):
            services.round_save(
                tenant=tenant,
                user_id=user_id,
                session_id=session_id,
                state={"round": r + 1, "plan": ["search", "draft", "review"][: r % 3 + 1]},
            )
        services.working_state_patch(
            session=session, changes={"current_subtask": "review draft", "tool_call_in_flight": None}
        )
        services.checkpoint_create(session=session, label="draft_ready")
        services.transition_record(
            session=session, from_agent=session.agent_id, to_agent="reviewer", reason="draft ready for review"
        )
        ended = rng.random() < 0.3
        if ended:
            services.session_end(session=session)
        self._timeline(rng, session, now=now, ended=ended)
        return count

    def _timeline(self, rng: random.Random, session: Session, *, now, ended: bool) -> None:
        """Give the session's rows the times of a real conversation (see the module docstring)."""
        messages = list(Message.objects.filter(session=session).order_by("seq").only("pk", "seq", "role"))
        gaps = [timedelta(seconds=rng.randint(20, 600) if m.role == "user" else rng.randint(2, 40)) for m in messages]
        length = sum(gaps, timedelta())
        if not ended and rng.random() < 0.4:  # still going: its last message minutes ago
            started = now - length - timedelta(minutes=rng.randint(1, 60))
        else:  # some day in the last 30; a conversation that would end in the future starts earlier
            started = min(
                now - timedelta(days=rng.randint(0, 29), hours=rng.randint(0, 12)), now - length - timedelta(minutes=5)
            )
        at = started
        for message, gap in zip(messages, gaps, strict=True):
            at += gap
            message.created_at = at
        Message.objects.bulk_update(messages, ["created_at"], batch_size=500)

        def moment(share: float):
            """The time of the message ``share`` of the way through the conversation."""
            return messages[min(len(messages) - 1, int(share * len(messages)))].created_at + timedelta(
                seconds=rng.randint(1, 20)
            )

        rounds = list(Round.objects.filter(session=session).order_by("round_id"))
        for n, saved in enumerate(rounds, start=1):
            saved.created_at = saved.updated_at = moment(n / (len(rounds) + 1))
        Round.objects.bulk_update(rounds, ["created_at", "updated_at"])
        Checkpoint.objects.filter(session=session).update(created_at=moment(0.85))
        AgentTransition.objects.filter(session=session).update(created_at=moment(0.85))
        last = messages[-1].created_at
        ended_at = last + timedelta(minutes=rng.randint(1, 15)) if ended else None
        Session.objects.filter(pk=session.pk).update(
            created_at=started, updated_at=min(ended_at or last, now), ended_at=min(ended_at, now) if ended_at else None
        )


def framework_sessions_create(*, tenant: Tenant, user_id: str) -> None:
    """One user's weather chat as each framework's example keeps it: ADK events with a tool call,
    a LangGraph thread with a fork, an OpenAI Agents SDK session with a tool call and a branch."""
    adk: dict[str, Any] = {
        "tenant": tenant,
        "app_name": "weather_app",
        "user_id": user_id,
        "session_id": "adk-weather",
    }
    adk_services.adk_session_create(**adk, state={"units": "metric"})
    start = time.time() - 3600
    parts: list[tuple[str, dict[str, Any]]] = [
        ("user", {"text": "What is the weather in Paris?"}),
        ("weather_agent", {"function_call": {"name": "get_weather", "args": {"city": "Paris"}}}),
        (
            "weather_agent",
            {"function_response": {"name": "get_weather", "response": {"report": "sunny, 21 C"}}},
        ),
        ("weather_agent", {"text": "It is sunny in Paris, 21 C."}),
    ]
    for n, (author, part) in enumerate(parts):
        adk_services.adk_event_append(
            **adk,
            event={
                "id": f"evt-{n + 1}",
                "invocation_id": "inv-1",
                "author": author,
                "timestamp": start + n * 5,
                "content": {"role": "user" if author == "user" else "model", "parts": [part]},
                "actions": {"state_delta": {"last_city": "Paris"} if "function_response" in part else {}},
            },
        )

    def put(checkpoint_id: str, parent: str | None, step: int, source: str, values: dict[str, Any]) -> None:
        # A checkpoint as LangGraph's serializer writes it: staff's view is its channel values.
        checkpoint = {"v": 4, "id": checkpoint_id, "channel_values": values}
        typed = {"type": "json", "data": base64.b64encode(json.dumps(checkpoint).encode()).decode()}
        langgraph_services.checkpoint_put(
            tenant=tenant,
            thread_id="weather-graph",
            user_id=user_id,
            default_user_id=user_id,
            checkpoint_ns="",
            checkpoint_id=checkpoint_id,
            parent_checkpoint_id=parent,
            checkpoint=typed,
            metadata={"source": source, "step": step, "run_id": "run-1" if checkpoint_id < "1f0-5" else "run-2"},
            channel_versions={"messages": step + 2},
        )

    said = ["What is the weather in Paris?", "Calling get_weather(Paris)", "sunny, 21 C", "It is sunny, 21 C."]
    put("1f0-0", None, -1, "input", {})
    for step in range(4):
        put(f"1f0-{step + 1}", f"1f0-{step}", step, "loop", {"messages": said[: step + 1], "city": "Paris"})
    # A fork: the question edited at step 0 (LangGraph's update_state), then the graph ran on.
    put("1f0-5", "1f0-1", 1, "update", {"messages": ["What is the weather in Oslo?"], "city": "Oslo"})
    put("1f0-6", "1f0-5", 2, "loop", {"messages": ["What is the weather in Oslo?", "snow, -3 C"], "city": "Oslo"})

    # The OpenAI Agents SDK's items (AgentStateSession stores each as its JSON text).
    marker = {"openai_agents": {"session_id": "weather-chat", "branch": "main"}}
    main = services.session_create(
        tenant=tenant, user_id=user_id, session_id="weather-chat", workspace_id="weather-chat", metadata=marker
    )
    turns: list[dict[str, Any]] = [
        {"role": "user", "content": "Hi, I am Ada."},
        _said("Hello Ada! Ask me about the weather.", 1),
        {"role": "user", "content": "What is the weather in Paris?"},
        *_tool_call("Paris", "sunny, 21 C", 2),
        _said("It is sunny in Paris, 21 C.", 3),
    ]
    services.message_append(session=main, messages=[_item(i) for i in turns])
    branch = services.session_fork(
        session=main,
        new_session_id="weather-chat.rome-instead",
        up_to_seq=2,
        metadata={"openai_agents": {"session_id": "weather-chat", "branch": "rome-instead"}},
    )
    rome = [{"role": "user", "content": "What is the weather in Rome?"}, *_tool_call("Rome", "clear, 18 C", 6)]
    services.message_append(session=branch, messages=[_item(i) for i in [*rome, _said("Clear skies, 18 C.", 7)]])
    # An hour ago, not at the load time (the ADK events carry their own times).
    ada = Session.objects.filter(tenant=tenant, user_id=user_id)
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Message.objects.filter(session__in=ada).update(created_at=an_hour_ago)
    ada.update(created_at=an_hour_ago, updated_at=an_hour_ago + timedelta(minutes=5))


def _said(text: str, n: int) -> dict[str, Any]:
    return {
        "id": f"msg-{n}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _tool_call(city: str, report: str, n: int) -> list[dict[str, Any]]:
    arguments = json.dumps({"city": city})
    return [
        {
            "id": f"fc-{n}",
            "call_id": f"call-{n}",
            "type": "function_call",
            "name": "get_weather",
            "arguments": arguments,
        },
        {"call_id": f"call-{n}", "type": "function_call_output", "output": report},
    ]


def _item(item: dict[str, Any]) -> dict[str, Any]:
    """A message as AgentStateSession writes an item: its JSON text, role, type and name."""
    return {
        "role": item.get("role", ""),
        "type": item.get("type", "message"),
        "name": item.get("name", ""),
        "content": json.dumps(item),
    }
