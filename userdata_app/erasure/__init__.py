"""The erasure workflow (GDPR Art. 17), one module per responsibility: a request's ``lifecycle``,
its ``execution`` (preview, one transaction, receipt), the ``storage`` clean-up after it commits, the
erased-subject ``registry`` and ``reapply`` after a restore. Callers use this package
(``from userdata_app import erasure``)."""

from agentstate.subject_data import category_label, counts_text
from userdata_app.erasure.execution import (
    ERASED_REPR,
    ErasureFailed,
    ErasureHeld,
    erasure_execute,
    erasure_preview,
    erasure_withheld,
    receipt_document,
    signed_with_development_key,
    subjects_preview,
)
from userdata_app.erasure.lifecycle import (
    OPEN_STATUSES,
    STEPS,
    add_months,
    erasure_identity_check,
    erasure_request_create,
    erasure_request_extend,
    erasure_request_hold,
    erasure_request_received,
    erasure_request_reject,
    erasure_request_release,
    erasure_request_verify,
    erasure_subjects_added,
    step_allowed,
    subject_id_check,
)
from userdata_app.erasure.reapply import erased_subjects_export, erased_subjects_import, erasures_reapply
from userdata_app.erasure.storage import (
    STORAGE_CLEANUP_OWED,
    WAL_PENDING,
    WORKING_STATE_OWED,
    WORKING_STATE_UNREACHABLE,
    erasure_storage_retry,
    storage_cleaned,
)

__all__ = [
    "ERASED_REPR",
    "OPEN_STATUSES",
    "STEPS",
    "STORAGE_CLEANUP_OWED",
    "WAL_PENDING",
    "WORKING_STATE_OWED",
    "WORKING_STATE_UNREACHABLE",
    "ErasureFailed",
    "ErasureHeld",
    "add_months",
    "category_label",
    "counts_text",
    "erased_subjects_export",
    "erased_subjects_import",
    "erasure_execute",
    "erasure_identity_check",
    "erasure_preview",
    "erasure_request_create",
    "erasure_request_extend",
    "erasure_request_hold",
    "erasure_request_received",
    "erasure_request_reject",
    "erasure_request_release",
    "erasure_request_verify",
    "erasure_storage_retry",
    "erasure_subjects_added",
    "erasure_withheld",
    "erasures_reapply",
    "receipt_document",
    "signed_with_development_key",
    "step_allowed",
    "storage_cleaned",
    "subject_id_check",
    "subjects_preview",
]
