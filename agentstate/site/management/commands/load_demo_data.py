"""Fill the database with a realistic demo data set so a new user has something to browse:
several tenants and users, sessions with hundreds of messages spread over the last 30 days,
rounds, checkpoints, transitions, working state, user data and two erasure requests."""
import random
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from agentstate.tenancy.models import Tenant
from agentstate.tenancy.services import tenant_get_or_create
from sessions_app import services
from sessions_app.models import Message, Session
from userdata_app import erasure
from userdata_app import services as userdata_services

TENANTS = ("demo-acme", "demo-globex", "demo-initech")
AGENTS = ("planner", "researcher", "writer", "support-bot")
WORKSPACES = ("default", "sales", "research")
USER_LINES = (
    "Can you summarise the last quarter's numbers?", "Draft a reply to the customer about the delay.",
    "What changed in the API since version 2?", "Book a meeting with the design team next week.",
    "Find the three cheapest flights to Lisbon.", "Explain this stack trace to me.",
)
ASSISTANT_LINES = (
    "Here is a short summary with the key figures.", "I drafted a reply; tell me if the tone is right.",
    "Three endpoints changed; the rest is backwards compatible.", "Tuesday 10:00 works for everyone.",
    "I found three options under 200 EUR.", "The error comes from a missing migration.",
)


class Command(BaseCommand):
    help = "Load a demo data set (tenants demo-acme, demo-globex, demo-initech) for browsing the admin."

    def add_arguments(self, parser):
        parser.add_argument("--users", type=int, default=4, help="Users per tenant (default 4).")
        parser.add_argument("--seed", type=int, default=7, help="Random seed, for a reproducible data set.")

    def handle(self, *args, users: int, seed: int, **options):
        if Tenant.objects.filter(slug__in=TENANTS).exists():
            raise CommandError("Demo data is already loaded (tenants demo-*). Use a fresh database to load it again.")
        rng = random.Random(seed)
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
                    userdata_services.user_datum_set(tenant=tenant, user_id=user_id, key="email", value=f"{user_id}@{slug}.example")
                    userdata_services.user_datum_set(tenant=tenant, user_id=user_id, key="name", value=f"Demo User {n + 1}")
                    userdata_services.user_datum_set(
                        tenant=tenant, user_id=user_id, key="preferences",
                        value={"language": rng.choice(["en", "de", "fr"]), "tone": rng.choice(["brief", "detailed"])},
                    )
            acme = Tenant.objects.get(slug=TENANTS[0])
            erasure.erasure_request_create(
                subjects=[(acme, "user-001")], scope="everything", requested_by="demo ticket 1001",
                received_at=now - timedelta(days=40),
            )
            verified = erasure.erasure_request_create(subjects=[(acme, "user-002")], requested_by="demo ticket 1002")
            erasure.erasure_request_verify(request=verified)
        self.stdout.write(self.style.SUCCESS(
            f"Loaded {len(TENANTS)} tenants, {len(TENANTS) * users} users, {totals['sessions']} sessions, "
            f"{totals['messages']} messages and 2 erasure requests."
        ))

    def _session(self, rng: random.Random, tenant, user_id: str, session_id: str, now) -> int:
        session = services.session_create(
            tenant=tenant, user_id=user_id, session_id=session_id, agent_id=rng.choice(AGENTS),
            workspace_id=rng.choice(WORKSPACES), metadata={"channel": rng.choice(["web", "slack", "api"])},
        )
        count = rng.randint(100, 400)
        for start in range(0, count, services.MAX_MESSAGES_PER_APPEND):
            services.message_append(session=session, messages=[
                {"role": "user", "content": rng.choice(USER_LINES)} if i % 2 == 0
                else {"role": "assistant", "name": session.agent_id, "content": [{"type": "text", "text": rng.choice(ASSISTANT_LINES)}],
                      "usage": {"input_tokens": rng.randint(50, 900), "output_tokens": rng.randint(20, 400)}}
                for i in range(start, min(count, start + services.MAX_MESSAGES_PER_APPEND))
            ])
        for r in range(rng.randint(3, 10)):
            services.round_save(tenant=tenant, user_id=user_id, session_id=session_id, state={"round": r + 1, "plan": ["search", "draft", "review"][: r % 3 + 1]})
        services.working_state_patch(session=session, changes={"current_subtask": "review draft", "tool_call_in_flight": None})
        services.checkpoint_create(session=session, label="draft_ready")
        services.transition_record(session=session, from_agent=session.agent_id, to_agent="reviewer", reason="draft ready for review")
        # Demo only: spread the history over the last 30 days so the dashboard chart has a shape.
        started = now - timedelta(days=rng.randint(0, 29), hours=rng.randint(0, 12))
        Message.objects.filter(session=session).update(created_at=started)
        Session.objects.filter(pk=session.pk).update(created_at=started)
        if rng.random() < 0.3:
            services.session_end(session=session)
        return count
