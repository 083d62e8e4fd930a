"""Memory items in the map of people's data: user data, erased and exported with the person."""

from __future__ import annotations

from agentstate.subject_data import Export, Portable, SubjectData, register
from agentstate.subjects import USER_DATA
from userdata_app.memory.models import MemoryItem
from userdata_app.memory.selectors import MEMORY_INDEX, subject_memory_export

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
        ),
    )
