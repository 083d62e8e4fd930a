"""Domain errors raised by services and selectors.

Each carries a stable ``code`` and the HTTP status the API maps it to, so views never decide
what a rule's failure means.
"""

from __future__ import annotations


class DomainError(Exception):
    """Base of every error a caller can cause; never a server fault."""

    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, fields: dict[str, list[str]] | None = None):
        super().__init__(message)
        self.message = message
        self.fields = fields or {}


class InvalidInput(DomainError):
    """Input that breaks a rule of the domain; ``fields`` names the offending fields."""

    status_code = 400
    code = "invalid"

    @classmethod
    def for_field(cls, field: str, message: str) -> InvalidInput:
        return cls(f"{field}: {message}", fields={field: [message]})


class NotFound(DomainError):
    status_code = 404
    code = "not_found"


class Conflict(DomainError):
    status_code = 409
    code = "conflict"


class SessionAlreadyExists(Conflict):
    code = "session_exists"


class SessionEnded(Conflict):
    code = "session_ended"


class SubjectErased(Conflict):
    """Writes that would recreate a subject's data during the grace period after its erasure."""

    code = "subject_erased"


class Held(Conflict):
    """A deletion refused because a legal hold covers the data (agentstate.holds). The answer names
    the hold's ``references`` (a case number staff chose to show), never its reason."""

    code = "held"

    def __init__(self, message: str, *, references: list[str]):
        super().__init__(message)
        self.references = references

    @classmethod
    def of(cls, reference: str, *, what: str) -> Held:
        return cls(
            f"A legal hold ({reference}) keeps {what}: nothing was deleted. Writes still work; "
            "deletions do once the hold is released.",
            references=[reference],
        )


class PersonKeyRefused(DomainError):
    """A key scoped to one person naming another person or calling a tenant-wide route
    (agentstate.api.people), or a request confined to one person reaching past them. The same
    answer whether that other person has data or not."""

    status_code = 403
    code = "person_key"


class PreconditionFailed(DomainError):
    """The caller's ``If-Match`` version no longer matches the stored one."""

    status_code = 412
    code = "precondition_failed"


class ValueTooLarge(DomainError):
    """A stored value over its size limit (an artifact over ``ARTIFACT_MAX_BYTES``)."""

    status_code = 413
    code = "too_large"


class StorageUnavailable(Exception):
    """Django's file storage (an artifact's bytes, kept outside the database) failed or could not be
    reached. Not the caller's fault: the API answers 503 (agentstate.api.errors)."""
