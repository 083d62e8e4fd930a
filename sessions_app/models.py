"""Process state: sessions, their message history, rounds, checkpoints, transitions, working state.

Every row carries its tenant and user id (copied from its session, never changed) so rows can be
distributed by owner later. Each Meta names the queries its indexes serve.
"""
from django.db import models
from django.utils import timezone

from agentstate.tenancy.models import Tenant


class Session(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=128)
    session_id = models.CharField(max_length=128)
    # Part of the identity: a framework's app (Google ADK's app_name) scopes its sessions, so one
    # session id under two apps is two sessions. Sessions of the REST API itself have none.
    app_name = models.CharField(max_length=128, blank=True, default="", db_default="")
    # Which framework adapter keeps this session ("" for the REST API's own): how the admin and the
    # exports read its messages. Not part of the identity.
    framework = models.CharField(max_length=32, blank=True, default="", db_default="")
    agent_id = models.CharField(max_length=128, blank=True, default="")
    workspace_id = models.CharField(max_length=128, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    # Counters bumped under the session's row lock: gap-free message numbers and the largest
    # round id (the next automatic round is last_round_id + 1).
    last_seq = models.BigIntegerField(default=0, editable=False)
    last_round_id = models.BigIntegerField(default=0, editable=False)
    # Compare-and-set version behind the API's ETag / If-Match.
    version = models.PositiveIntegerField(default=1, editable=False)

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
            # Serve: the admin's created-date, agent and workspace filters across tenants, for the
            # same reason, and child rows (messages, rounds, ...) filtered by tenant, user or session
            # id through their session (sessions_app.admin.sessions_where) rather than by indexes on
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
    def message_count(self) -> int:
        """History is append-only, so the last sequence number is the count."""
        return self.last_seq


class Message(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages", db_index=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=128)
    seq = models.BigIntegerField()
    client_id = models.CharField(max_length=128, null=True, blank=True)
    role = models.CharField(max_length=32)
    type = models.CharField(max_length=32, default="message")
    status = models.CharField(max_length=32, blank=True, default="")
    name = models.CharField(max_length=128, blank=True, default="")
    content = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    usage = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

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
        ]

    def __str__(self) -> str:
        return f"Message #{self.seq} of session #{self.session_id}"


class Round(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="rounds", db_index=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=128)
    round_id = models.PositiveIntegerField()
    state = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    version = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            # Serves: one round, the latest round (largest id), rounds in order.
            models.UniqueConstraint(fields=["session", "round_id"], name="round_unique_id"),
        ]

    def __str__(self) -> str:
        return f"Round {self.round_id} of session #{self.session_id}"


class Checkpoint(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="checkpoints", db_index=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=128)
    label = models.CharField(max_length=128)
    state = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            # Serves: the newest checkpoint with a label (ties broken by insertion order, id).
            models.Index(fields=["session", "label", "id"], name="checkpoint_label_latest"),
            # Serves: a session's checkpoints in insertion order.
            models.Index(fields=["session", "id"], name="checkpoint_session_order"),
        ]

    def __str__(self) -> str:
        return f"Checkpoint #{self.pk} ({self.label})"


class AgentTransition(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="transitions", db_index=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=128)
    from_agent = models.CharField(max_length=128, blank=True, default="")
    to_agent = models.CharField(max_length=128)
    reason = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            # Serves: a session's transitions in order.
            models.Index(fields=["session", "id"], name="transition_session_order"),
        ]

    def __str__(self) -> str:
        return f"Transition #{self.pk}: {self.from_agent or '-'} -> {self.to_agent}"


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
