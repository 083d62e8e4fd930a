"""Fill the database with a realistic demo data set so a new user has something to browse:
several tenants and users, sessions with hundreds of messages spread over the last 30 days,
rounds, checkpoints, transitions, working state, user data and two erasure requests.

Everything is written through the services (so it obeys their rules), then each session's times
are set to a believable timeline: a conversation of replies seconds apart and questions minutes
apart, with rounds, the checkpoint and the hand-off at their moment in it, ``updated_at`` its last
activity and ``ended_at`` shortly after, all in the past; some live sessions were active minutes
ago, so "active sessions today" has something to show. The services would stamp the load time."""

import random
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from agentstate.tenancy.models import Tenant
from agentstate.tenancy.services import tenant_get_or_create
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
            erasure.erasure_request_verify(request=verified)
        self.stdout.write(
            self.style.SUCCESS(
                f"Loaded {len(TENANTS)} tenants, {len(TENANTS) * users} users, {totals['sessions']} sessions, "
                f"{totals['messages']} messages and 2 erasure requests."
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
