"""The access log's entries and each tenant's chain head."""

from django.db import models


class AccessEntry(models.Model):
    """One access or compliance step, in its tenant's chain. ``mac`` is HMAC-SHA256, under the
    receipt key ``key_id`` (outside the database), of every other field and the previous entry's
    ``mac``: an entry edited, removed or moved no longer matches (``chain.verify``). The subject is
    the keyed hash erasure receipts use; what was touched is a model label and primary keys."""

    class Action(models.TextChoices):
        VIEW = "view", "Opened a record"
        LIST = "list", "Listed records"
        SEARCH = "search", "Searched records"
        EXPORT = "export", "Exported a subject's data"
        ERASURE = "erasure", "Erasure request step"
        API = "api", "Compliance key API call"
        LOOKUP = "lookup", "Looked up who saw a subject's data"
        RETENTION = "retention", "Retention removed older entries"
        CHAIN = "chain", "A tenant's chain began (the roster of chains)"

    tenant = models.CharField(max_length=64, help_text="The tenant's slug: the log outlives the tenant.")
    seq = models.BigIntegerField()
    at = models.DateTimeField()
    actor = models.CharField(max_length=150, help_text="Staff username, the API key's name, or manage.py.")
    action = models.CharField(max_length=16, choices=Action.choices)
    purpose = models.CharField(max_length=500, blank=True)
    model = models.CharField(max_length=100, blank=True, help_text="app_label.Model of what was touched.")
    object_pks = models.JSONField(default=list)
    subject_hash = models.CharField(max_length=64, blank=True)
    key_id = models.CharField(max_length=64)
    detail = models.JSONField(default=dict, help_text="Step, route or retention anchor; never an id or content.")
    prev_mac = models.CharField(max_length=64)
    mac = models.CharField(max_length=64)

    class Meta:
        verbose_name = "access log entry"
        verbose_name_plural = "access log"
        constraints = [models.UniqueConstraint(fields=["tenant", "seq"], name="access_entry_tenant_seq")]
        indexes = [
            # Who saw a subject's data: the officers' look-up, newest first.
            models.Index(fields=["subject_hash", "-seq"], name="access_entry_subject"),
        ]
        permissions = [("export_accessentry", "Can export the access log for an auditor")]

    def __str__(self) -> str:
        return f"{self.tenant} #{self.seq}"


class AccessChainHead(models.Model):
    """A tenant's last entry: writers lock this row (SELECT ... FOR UPDATE) so entries are chained
    one at a time, whatever the number of app servers."""

    tenant = models.CharField(max_length=64, primary_key=True)
    seq = models.BigIntegerField(default=0)
    mac = models.CharField(max_length=64, blank=True)

    def __str__(self) -> str:
        return f"{self.tenant} at #{self.seq}"


class AccessPolicy(models.Model):
    """Per tenant: staff give a reason before opening a person's conversation (its session's page)."""

    tenant = models.OneToOneField("tenancy.Tenant", on_delete=models.CASCADE, related_name="+")
    reason_required = models.BooleanField(default=False)

    class Meta:
        verbose_name = "access policy"
        verbose_name_plural = "access policies"

    def __str__(self) -> str:
        return f"Access policy of {self.tenant}"
