"""Tenants, the unit of isolation (every stored row belongs to exactly one), and their API keys."""

from typing import ClassVar

from django.db import models
from rest_framework_api_key import models as api_key_models
from rest_framework_api_key.models import AbstractAPIKey

from agentstate.identifiers import IdentifierField


class Tenant(models.Model):
    slug = models.SlugField(max_length=64, unique=True, help_text="Stable name used by API keys and commands.")
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        permissions = [
            # Staff with this permission use the REST API (browsable API) as any tenant: ?tenant=<slug>.
            ("use_api_as_tenant", "Can use the REST API as any tenant"),
        ]

    def __str__(self) -> str:
        return self.slug


class SubjectOwned(models.Model):
    """The owner of a row about one person: ``(tenant, user_id)`` on the row itself, so a subject's
    rows (erasure, export, a user's lists) are found without a join and rows can be distributed by
    owner. Each model's own indexes lead with these columns where a query needs them."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = IdentifierField()

    class Meta:
        abstract = True


class APIKeyManager(api_key_models.APIKeyManager):
    def get_usable_keys(self) -> models.QuerySet:
        # The tenant comes with the key: authenticating costs one query, then none while cached.
        return super().get_usable_keys().select_related("tenant")


class APIKey(AbstractAPIKey):
    """A tenant's API key (djangorestframework-api-key): only a SHA-512 hash of it is stored, the
    key itself is shown once at creation. ``scope`` says what it may reach; ``user_id``, when set,
    narrows it to that one person's data (agentstate.api.people), for an agent acting for one person."""

    class Scope(models.TextChoices):
        AGENT = "agent", "Agent (sessions, state, user data)"
        COMPLIANCE = "compliance", "Compliance (also erasure and subject export)"

    objects: ClassVar[APIKeyManager] = APIKeyManager()

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    scope = models.CharField(max_length=16, choices=Scope.choices, default=Scope.AGENT)
    user_id = IdentifierField(
        null=True,
        blank=True,
        verbose_name="user id",
        help_text="Only this person's data (kept exactly as typed). Empty: the whole tenant.",
    )

    class Meta(AbstractAPIKey.Meta):
        verbose_name = "API key"
        verbose_name_plural = "API keys"
