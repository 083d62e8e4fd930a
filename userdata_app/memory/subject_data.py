"""Memory items in the map of people's data: user data, erased and exported with the person."""

from __future__ import annotations

from agentstate.subject_data import DerivedFrom, Export, Portable, SubjectData, register, register_not_personal
from agentstate.subjects import USER_DATA
from userdata_app.memory.models import MemoryItem, MemorySource
from userdata_app.memory.selectors import MEMORY_INDEX, memory_items_kept_for_review, subject_memory_export
from userdata_app.memory.services import memory_sources_session_deleted

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
            portable=Portable("memory", order=("namespace", "key"), key=("namespace", "key")),
            # A memory made from sessions goes with the last of them (or stays for review).
            derived_from=DerivedFrom(MemorySource, memory_sources_session_deleted, kept=memory_items_kept_for_review),
        ),
    )
    register_not_personal(
        "userdata_app.MemorySource",
        "which sessions an item was made from: erased with its item (the cascade), exported in its record",
    )
    register_not_personal(
        "userdata_app.MemoryVector",
        "embeddings of an item's value (people's data as the value is): erased with its item (the cascade), "
        "exported in its record",
    )
    register_not_personal("userdata_app.MemoryPolicy", "a tenant's setting, nothing of a person")
