"""A person's first search by meaning in a worker (its vectors not yet copied: after a restart)
reads that person's vectors only, however many the database holds. PostgreSQL planned that read,
through a server-side cursor, for its first rows and, its estimate of a prefix's rows far too low,
went through every vector stored for each of the person's: seconds for a few thousand."""

from __future__ import annotations

import time

import numpy as np
import pytest

from agentstate.tenancy.services import tenant_get_or_create
from agentstate_site import bulk_data
from userdata_app.memory import vector_cache
from userdata_app.memory.models import MemoryVector
from userdata_app.memory.vectors import memory_vector_search

DIMS = 768

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.usefixtures("postgres_only"),
]


def test_a_persons_first_search_reads_their_vectors_only():
    rng = np.random.default_rng(45)
    person, others = tenant_get_or_create(slug="cold-person"), tenant_get_or_create(slug="cold-others")
    bulk_data.memory_vectors_fill(tenant=person, people=[("reader", 2_000)], rng=rng, dims=DIMS)
    bulk_data.memory_vectors_fill(tenant=others, people=[(f"p{n}", 1_000) for n in range(20)], rng=rng, dims=DIMS)
    bulk_data.analyze()
    vector_cache.clear()
    query = rng.standard_normal(DIMS, dtype=np.float32)

    started = time.perf_counter()
    found = memory_vector_search(
        tenant=person, namespace_prefix=["users", "reader"], filter=None, vector=query.tobytes(), limit=3, offset=0
    )
    elapsed = time.perf_counter() - started

    rows = MemoryVector.objects.filter(item__tenant=person).values_list("item__key", "vector")
    keys = [key for key, _ in rows]
    matrix = np.stack([np.frombuffer(blob, dtype="<f4") for _, blob in rows])
    cosine = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query))
    assert [item.key for item, _ in found] == [keys[i] for i in np.argsort(-cosine)[:3]]
    assert elapsed < 2.0, f"a person's first search took {elapsed:.1f} s"
