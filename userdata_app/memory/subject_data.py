"""Memory items in the map of people's data: user data, erased and exported with the person."""

from __future__ import annotations

from agentstate.subject_data import (
    DerivedFrom,
    Export,
    Portable,
    SubjectData,
    register,
    register_not_personal,
    register_part,
)
from agentstate.subjects import USER_DATA
from userdata_app.memory.models import MemoryItem, MemorySource, MemoryVector
from userdata_app.memory.selectors import (
    MEMORY_INDEX,
    items_parts,
    memory_items_kept_for_review,
    subject_memory_export,
)
from userdata_app.memory.services import (
    memory_record_decode,
    memory_record_encode,
    memory_record_parts_write,
    memory_sources_session_deleted,
)

CATEGORY = "memories"


def declare() -> None:
    register(
        SubjectData(
            model=MemoryItem,
            category=CATEGORY,
            kind=USER_DATA,
            label="memories",
            # An item written again since an erasure holds only the new value: re-applying it keeps it.
            existed="updated_at",
            export=Export(CATEGORY, subject_memory_export),
            text_index=MEMORY_INDEX,
            # Its parts (sources, vectors) travel in its record.
            portable=Portable(
                "memory",
                order=("namespace", "key"),
                key=("namespace", "key"),
                encode=memory_record_encode,
                batch=items_parts,
                decode=memory_record_decode,
                after=memory_record_parts_write,
            ),
            # A memory made from sessions goes with the last of them (or stays for review).
            derived_from=DerivedFrom(MemorySource, memory_sources_session_deleted, kept=memory_items_kept_for_review),
        ),
    )
    register_part(MemorySource, of=MemoryItem, what="the sessions an item was made from")
    register_part(MemoryVector, of=MemoryItem, what="embeddings of the person's text in an item's value")
    register_not_personal("userdata_app.MemoryPolicy", "a tenant's setting, nothing of a person")
