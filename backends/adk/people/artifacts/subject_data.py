"""Artifacts in the map of people's data: user data, erased (files too) and exported with the person."""

from __future__ import annotations

from agentstate.subject_data import Export, Portable, SubjectData
from agentstate.subjects import USER_DATA
from agentstate.validation import clean_identifier
from backends.adk.people.artifacts.models import Artifact
from backends.adk.people.artifacts.selectors import subject_artifacts_export
from backends.adk.people.artifacts.services import (
    artifact_filename_clean,
    artifact_mime_type_clean,
    artifact_portable_decode,
    artifact_portable_discard,
    artifact_portable_encode,
)

CATEGORY = "artifacts"
SCOPE = ("user_id", "app_name", "session_id", "filename", "version")


def declarations() -> tuple[SubjectData, ...]:
    """ADK's artifacts in the map of people's data, registered with the backend (``backends.adk.apps``)."""
    return (
        SubjectData(
            model=Artifact,
            category=CATEGORY,
            kind=USER_DATA,
            label="artifacts",
            # A version saved since an erasure is the person's new data: re-applying it keeps it.
            existed="created_at",
            hangs_off="adk_session",  # a session's artifact: a hold on the session keeps it
            export=Export(CATEGORY, subject_artifacts_export),
            # The bytes travel (base64), not the storage's random name.
            portable=Portable(
                "artifact",
                order=SCOPE,
                key=SCOPE,
                encode=artifact_portable_encode,
                decode=artifact_portable_decode,
                discard=artifact_portable_discard,
                checks={
                    "app_name": clean_identifier,
                    "filename": artifact_filename_clean,
                    "mime_type": artifact_mime_type_clean,
                },
            ),
            retention="a session's artifacts go with their ADK session (deleted by delete_ended_after_days); "
            "user: artifacts are the person's user data, kept until erased",
        ),
    )


# Models with a user id or a key to people's data that hold nothing of a person, and why.
NOT_PERSONAL = (
    ("userdata_app.ArtifactFileOwed", "the random storage names of deleted artifacts' files, nothing of the person"),
)
