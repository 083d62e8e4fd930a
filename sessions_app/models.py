"""Process state: sessions, their message history, rounds, checkpoints, transitions, working state.

Every row of a session is ``SessionOwned``: it carries its owner, copied from its session. Each
Meta names the queries its indexes serve.
"""

from django.db import models
from django.utils import timezone

from agentstate.identifiers import IdentifierField
from agentstate.tenancy.models import SubjectOwned, Tenant


class Session(SubjectOwned):
    session_id = IdentifierField()
    # Part of the identity: a framework's app (Google ADK's app_name) scopes its sessions, so one
    # session id under two apps is two sessions. Sessions of the REST API itself have none.
    app_name = IdentifierField(blank=True, default="", db_default="")
    # Which framework adapter keeps this session ("" for the REST API's own): how the admin and the
    # exports read its messages. Not part of the identity.
    framework = models.CharField(max_length=32, blank=True, default="", db_default="")
    agent_id = IdentifierField(blank=True, default="")
    workspace_id = IdentifierField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # The activity time: every write through any API moves it in its own transaction (retention
    # judges idleness by it alone).
    updated_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    # True while the session is ended because retention found it idle: the next write reopens it.
    # An end an agent asked for (POST .../end/) is final for the core API's writes.
    ended_by_retention = models.BooleanField(default=False, db_default=False, editable=False)
    # Counters bumped under the session's row lock: the last message number ever given (never
    # reused, so an edit leaves a gap), the largest round id (the next automatic round is
    # last_round_id + 1), how many messages are stored (every write keeps it true, so nobody
    # counts rows), and the history generation every edit (pop, rewind, clear) advances.
    last_seq = models.BigIntegerField(default=0, editable=False)
    last_round_id = models.BigIntegerField(default=0, editable=False)
    message_count = models.BigIntegerField(default=0, db_default=0, editable=False)
    history_generation = models.BigIntegerField(default=0, db_default=0, editable=False)
    # Where a fork came from: the parent session (same tenant and user), the last message seq and
    # round id it copied. The parent's session id is kept as text too, so a fork still says where
    # it came from after its parent is deleted.
    parent = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="forks", db_index=False
    )
    forked_from_session_id = IdentifierField(blank=True, default="", db_default="")
    forked_from_seq = models.BigIntegerField(null=True, blank=True)
    forked_from_round = models.BigIntegerField(null=True, blank=True)
    # Compare-and-set version behind the API's ETag / If-Match.
    version = models.PositiveIntegerField(default=1, editable=False)
    # A framework's durable session state as JSON text (Google ADK's keys without a prefix), and
    # the framework's own last-update time (ADK: the last event's timestamp, seconds).
    durable_state = models.TextField(blank=True, default="", db_default="")
    last_update_time = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            # Serves: get one session by (tenant, user_id, session_id, app_name); list a user's sessions.
            models.UniqueConstraint(
                fields=["tenant", "user_id", "session_id", "app_name"], name="session_unique_per_user"
            ),
        ]
        indexes = [
            # Serves: a user's sessions in cursor order (created_at, id).
            models.Index(fields=["tenant", "user_id", "created_at", "id"], name="session_user_created"),
            # Serves: a tenant's sessions in cursor order, and date-range filters.
            models.Index(fields=["tenant", "created_at", "id"], name="session_tenant_created"),
            # Serves: filters by workspace and by agent, in cursor order.
            models.Index(fields=["tenant", "workspace_id", "created_at", "id"], name="session_workspace_created"),
            models.Index(fields=["tenant", "agent_id", "created_at", "id"], name="session_agent_created"),
            # Serve: the admin's exact search by user id or session id across tenants (the indexes
            # above lead with the tenant, which PostgreSQL cannot skip). Sessions are written once;
            # the per-append counter update leaves these columns alone, so it stays a HOT update.
            models.Index(fields=["user_id"], name="session_user_id"),
            models.Index(fields=["session_id"], name="session_session_id"),
            # Serves: a session's forks (the admin's links; SET NULL when a parent is deleted).
            models.Index(fields=["parent"], name="session_parent", condition=models.Q(parent__isnull=False)),
            # Serves: ADK's list_sessions of one app, oldest update first, paged by keyset.
            models.Index(
                fields=["tenant", "app_name", "last_update_time", "user_id", "session_id"], name="session_app_updated"
            ),
            # Serve: the admin's created-date, agent and workspace filters across tenants, for the
            # same reason, and child rows (messages, rounds, ...) filtered by tenant, user or session
            # id through their session (sessions_app.admin.history.sessions_where) rather than by indexes on
            # the children, which every append would pay for. Written once, at create, and left
            # alone by the per-append update. ``updated_at`` (the admin's "active" filter) has no
            # index on purpose: every append changes it, and an index on it would turn that HOT
            # update into one that rewrites every index of the row; that filter reads the sessions
            # table, one row per session, never the messages.
            models.Index(fields=["created_at"], name="session_created"),
            models.Index(fields=["agent_id"], name="session_agent_id"),
            models.Index(fields=["workspace_id"], name="session_workspace_id"),
        ]

    def __str__(self) -> str:
        # No user id here: the admin log keeps __str__ of what staff touch.
        return f"Session #{self.pk}"

    @property
    def is_ended(self) -> bool:
        return self.ended_at is not None

    @property
    def fork_origin(self) -> dict | None:
        """Where a fork was copied from (the API's ``forked_from``); None for a session that is no fork."""
        if self.forked_from_seq is None:
            return None
        return {"session_id": self.forked_from_session_id, "seq": self.forked_from_seq, "round": self.forked_from_round}


class SessionOwned(SubjectOwned):
    """A row of one session. Its owner ``(tenant, user_id)`` is copied from the session when the row
    is written and never changed, so tenant- and user-wide queries skip the join and rows can be
    distributed by owner. Session has no reverse accessor for them: callers query the model
    (``Message.objects.filter(session=...)``), as the services and selectors do."""

    # No index of its own: each model's constraints and indexes lead with the session.
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+", db_index=False)
    # No database constraint: the session's own key already proves the tenant exists, and checking
    # it again per row doubled what a fork pays at commit. Deleting a tenant still deletes these
    # rows (Django cascades).
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True


class Message(SessionOwned):
    seq = models.BigIntegerField()
    # NULL, not "": messages without a client id stay outside message_unique_client_id.
    client_id = IdentifierField(null=True, blank=True)
    role = models.CharField(max_length=32)
    type = models.CharField(max_length=32, default="message")
    status = models.CharField(max_length=32, blank=True, default="")
    name = IdentifierField(blank=True, default="")
    content = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    usage = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            # Serves: history in order, after a sequence number, the most recent N.
            models.UniqueConstraint(fields=["session", "seq"], name="message_unique_seq"),
            # Serves: the idempotent-retry lookup by the client's message id.
            models.UniqueConstraint(
                fields=["session", "client_id"],
                condition=models.Q(client_id__isnull=False),
                name="message_unique_client_id",
            ),
        ]
        indexes = [
            # Serves: history filtered by role, in order.
            models.Index(fields=["session", "role", "seq"], name="message_role_seq"),
            # Serves: a user's messages newest first, across sessions (search ranks the newest matches).
            models.Index(fields=["tenant", "user_id", "created_at", "id"], name="message_user_newest"),
        ]

    def __str__(self) -> str:
        return f"Message #{self.seq} of session #{self.session_id}"


class MessagePop(SessionOwned):
    """The answer to one pop, kept under the caller's idempotency key so a retried pop returns the
    same message instead of popping another. It holds a copy of the popped message: it goes with
    its session (delete, erasure) and is in the subject export."""

    key = IdentifierField()
    message = models.JSONField(null=True, blank=True)  # the popped message as the API showed it; null: none
    # When the popped message was written: drop_messages_after_days drops the copy with the messages
    # of its age (null for a pop that found none, or kept before this column: the pop's own time).
    message_created_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # Serves: the retry lookup by (session, key).
            models.UniqueConstraint(fields=["session", "key"], name="message_pop_unique_key"),
        ]

    def __str__(self) -> str:
        return f"Pop {self.key} of session #{self.session_id}"


class Round(SessionOwned):
    round_id = models.PositiveIntegerField()
    state = models.JSONField(default=dict)
    updated_at = models.DateTimeField(default=timezone.now)
    version = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            # Serves: one round, the latest round (largest id), rounds in order.
            models.UniqueConstraint(fields=["session", "round_id"], name="round_unique_id"),
        ]

    def __str__(self) -> str:
        return f"Round {self.round_id} of session #{self.session_id}"


class Checkpoint(SessionOwned):
    label = IdentifierField()
    state = models.JSONField(default=dict)

    class Meta:
        indexes = [
            # Serves: the newest checkpoint with a label (ties broken by insertion order, id).
            models.Index(fields=["session", "label", "id"], name="checkpoint_label_latest"),
            # Serves: a session's checkpoints in insertion order.
            models.Index(fields=["session", "id"], name="checkpoint_session_order"),
        ]

    def __str__(self) -> str:
        return f"Checkpoint #{self.pk} ({self.label})"


class AgentTransition(SessionOwned):
    from_agent = IdentifierField(blank=True, default="")
    to_agent = IdentifierField()
    reason = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            # Serves: a session's transitions in order.
            models.Index(fields=["session", "id"], name="transition_session_order"),
        ]

    def __str__(self) -> str:
        return f"Transition #{self.pk}: {self.from_agent or '-'} -> {self.to_agent}"


class RunUsage(SessionOwned):
    """The model usage of one turn of a session (the OpenAI Agents SDK's ``store_run_usage``): turn
    N is the span from the history's N-th user message to the next (0: before the first). Token
    counts, no content; they go with the turn when a history edit removes it (services/usage.py)."""

    turn = models.PositiveIntegerField()
    requests = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    total_tokens = models.BigIntegerField(default=0)
    # The SDK's token details (cached_tokens, reasoning_tokens, ...): small objects of counts.
    input_tokens_details = models.JSONField(null=True, blank=True)
    output_tokens_details = models.JSONField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # Serves: one turn's usage (the upsert), a session's usage in turn order, the drop after an edit.
            models.UniqueConstraint(fields=["session", "turn"], name="run_usage_unique_turn"),
        ]
        indexes = [
            # Serves: the dashboard's totals per tenant and per user.
            models.Index(fields=["tenant", "user_id"], name="run_usage_owner"),
        ]

    def __str__(self) -> str:
        return f"Usage of turn {self.turn} of session #{self.session_id}"


class WorkingStateEntry(models.Model):
    """Working state of one live session for the database backend (see working_state.py).

    A table of its own rather than Django's database cache, which culls a third of all entries
    once MAX_ENTRIES is reached and would drop live sessions' state.
    """

    session = models.OneToOneField(Session, on_delete=models.CASCADE, primary_key=True, related_name="+")
    data = models.JSONField(default=dict)
    expires_at = models.DateTimeField()
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            # Serves: the sweep of expired entries (purge_working_state).
            models.Index(fields=["expires_at"], name="working_state_expiry"),
        ]

    def __str__(self) -> str:
        return f"Working state of session #{self.session_id}"


# --- Retention -------------------------------------------------------------------------------


class RetentionPolicy(models.Model):
    """How long a tenant's process state lives; ``apply_retention`` enforces it. Every rule is
    optional (null: keep everything, as without a policy). Saved through ``retention_policy_save``,
    which validates; retention is housekeeping, not erasure (no receipt, no registry entry)."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, primary_key=True, related_name="+")
    delete_ended_after_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Delete ended sessions this many days after they ended."
    )
    end_idle_after_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="End live sessions nobody wrote to for this many days."
    )
    keep_latest_rounds = models.PositiveIntegerField(
        null=True, blank=True, help_text="Keep only this many rounds (the largest round ids) per session."
    )
    drop_messages_after_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Drop messages older than this many days from sessions that live on (off when empty).",
    )
    # The values of the rules framework backends register (``sessions_app.backends.RetentionRule``),
    # by their ``policy_field``: the core's columns name no framework.
    backend_rules = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    RULES = (
        "delete_ended_after_days",
        "end_idle_after_days",
        "keep_latest_rounds",
        "drop_messages_after_days",
    )

    class Meta:
        verbose_name_plural = "retention policies"

    def __str__(self) -> str:
        return f"Retention policy of tenant #{self.tenant_id}"

    def rule(self, name: str) -> int | None:
        """A rule's value, the core's column or a backend's."""
        return getattr(self, name) if name in self.RULES else self.backend_rules.get(name)


class RetentionRun(models.Model):
    """One run of ``apply_retention``: what it removed (or, dry, would remove) per tenant and category."""

    started_at = models.DateTimeField(default=timezone.now)
    duration_seconds = models.FloatField(default=0)
    dry_run = models.BooleanField(default=False)
    tenant_slug = models.CharField(max_length=64, blank=True, default="")  # "" means every tenant
    counts = models.JSONField(default=dict, blank=True)  # {tenant slug: {category: rows}}
    # {tenant slug: {category: sessions the rule skipped because a legal hold covers them}}
    held = models.JSONField(default=dict, blank=True)
    # {tenant slug: {category: rows}}: user data made only from the sessions it deleted (memories),
    # counted in ``counts`` too (they went with their sessions), named apart here.
    derived = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            # Serves: the dashboard's last runs.
            models.Index(fields=["-started_at"], name="retention_run_recent"),
        ]

    def __str__(self) -> str:
        return f"Retention run #{self.pk}"

    @property
    def total(self) -> int:
        return sum(n for per_tenant in self.counts.values() for n in per_tenant.values())
