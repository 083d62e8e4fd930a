"""LangGraph's search filter in SQL (userdata_app.memory.filters): each operator, nested keys,
numbers beside strings, missing keys, booleans and null answer as LangGraph's InMemoryStore
compares (``value_matches``), on SQLite's JSON1 and PostgreSQL's jsonb; what SQL cannot say
exactly is checked in Python, on the rows the rest of the filter selected; pages are cut by the
database."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from userdata_app.memory import filters
from userdata_app.memory.models import MemoryItem
from userdata_app.memory.services import memory_batch

pytestmark = pytest.mark.django_db

NAMESPACE = ["users", "u1", "facts"]
VALUES: dict[str, dict[str, Any]] = {
    "int2": {"v": 2},
    "int10": {"v": 10},
    "float9.5": {"v": 9.5},
    "zero": {"v": 0},
    "one": {"v": 1},
    "float1": {"v": 1.0},
    "neg": {"v": -3},
    "big": {"v": 10**400},
    "true": {"v": True},
    "false": {"v": False},
    "null": {"v": None},
    "missing": {"other": 1},
    "str10": {"v": "10"},
    "apple": {"v": "apple"},
    "Zebra": {"v": "Zebra"},
    "accent": {"v": "é"},
    "list": {"v": [1, "a"]},
    "obj": {"v": {"a": 1, "b": {"c": "x"}}},
    "obj-true": {"v": {"a": True}},
    "obj-empty": {"v": {}},
    "key-accent": {"é": 1},
}
EVERY = set(VALUES)


def put_all(tenant, values: dict[str, dict]) -> None:
    ops = [{"op": "put", "namespace": NAMESPACE, "key": key, "value": value} for key, value in values.items()]
    memory_batch(tenant=tenant, ops=ops)


def search(tenant, filter, *, limit: int = 100, offset: int = 0, query: str | None = None) -> list[str]:
    op = {"op": "search", "namespace_prefix": NAMESPACE, "filter": filter, "limit": limit, "offset": offset}
    [items] = memory_batch(tenant=tenant, ops=[{**op, "query": query}])
    return [item["key"] for item in items]


def in_sql(filter: dict) -> bool:
    """Whether the whole filter is said in SQL on this database (nothing left to Python)."""
    return not filters.filter_sql(filter, vendor=connection.vendor, column="value").rest


CASES = [
    # equality: Python's ==, so 1 == 1.0 == True and 0 == False; None is JSON null or no key
    ({"v": 1}, {"one", "float1", "true"}),
    ({"v": True}, {"one", "float1", "true"}),
    ({"v": 0}, {"zero", "false"}),
    ({"v": False}, {"zero", "false"}),
    ({"v": 9.5}, {"float9.5"}),
    ({"v": None}, {"null", "missing", "key-accent"}),
    ({"v": "10"}, {"str10"}),
    ({"v": 10}, {"int10"}),
    ({"other": 1}, {"missing"}),
    # nested: an object is matched key by key, a list item by item
    ({"v": {"a": 1}}, {"obj", "obj-true"}),
    ({"v": {}}, {"obj", "obj-true", "obj-empty"}),
    ({"v": {"b": {"c": "x"}}}, {"obj"}),
    ({"v": {"b": {"c": {"$gte": "x"}}}}, {"obj"}),
    ({"v": {"a": None}}, {"obj-empty"}),
    ({"v": [1, "a"]}, {"list"}),
    ({"v": [True, "a"]}, {"list"}),
    ({"v": [1]}, set()),
    # $eq and $ne: whole values (an object equals only the same keys), a missing key is None
    ({"v": {"$eq": {"a": 1}}}, {"obj-true"}),
    ({"v": {"$eq": {"a": 1, "b": {"c": "x"}}}}, {"obj"}),
    ({"v": {"$eq": [1, "a"]}}, {"list"}),
    ({"v": {"$eq": "apple"}}, {"apple"}),
    ({"v": {"$ne": 1}}, EVERY - {"one", "float1", "true"}),
    ({"v": {"$ne": None}}, EVERY - {"null", "missing", "key-accent"}),
    ({"other": {"$ne": 1}}, EVERY - {"missing"}),
    ({"v": {"$ne": {"a": 1}}}, EVERY - {"obj-true"}),
    # order: numbers with numbers (never a boolean, a string or a missing key), strings with strings
    ({"v": {"$gt": 2}}, {"int10", "float9.5", "big"}),
    ({"v": {"$gte": 2}}, {"int2", "int10", "float9.5", "big"}),
    ({"v": {"$lt": 1}}, {"zero", "neg"}),
    ({"v": {"$lte": 1}}, {"zero", "one", "float1", "neg"}),
    ({"v": {"$gt": 1, "$lt": 10}}, {"int2", "float9.5"}),
    ({"v": {"$gte": 1.0, "$lte": 1}}, {"one", "float1"}),
    ({"v": {"$gt": "Zebra"}}, {"apple", "accent"}),  # code point order: "a" and "é" after "Z"
    ({"v": {"$lt": "apple"}}, {"str10", "Zebra"}),
    ({"v": {"$lte": "10"}}, {"str10"}),
    # several keys: all of them
    ({"v": {"$gte": 0}, "other": None}, {"int2", "int10", "float9.5", "zero", "one", "float1", "big"}),
]


@pytest.mark.parametrize("filter, expected", CASES)
def test_each_operator_answers_as_langgraphs_in_memory_store_in_sql(tenant, filter, expected):
    put_all(tenant, VALUES)
    assert in_sql(filter)
    assert set(search(tenant, filter)) == expected
    assert expected == {key for key, value in VALUES.items() if filters.value_matches(value, filter)}


FALLBACKS = [
    ({"v": {"$gt": 2**53}}, {"big"}),  # a number past 2**53: Python compares int and float exactly
    ({"v": 10**20}, set()),
    ({"v": {"$gt": 2}, "other": {"$ne": 2**60}}, {"int10", "float9.5", "big"}),  # one key in SQL, one in Python
    ({f"absent{i}": None for i in range(250)}, EVERY),  # past MAX_CONDITIONS
]


@pytest.mark.parametrize("filter, expected", FALLBACKS)
def test_what_sql_cannot_say_exactly_is_checked_in_python_with_the_same_answer(tenant, filter, expected):
    put_all(tenant, VALUES)
    assert not in_sql(filter)
    assert set(search(tenant, filter)) == expected
    assert set(search(tenant, filter, limit=2, offset=1)) <= expected


def test_a_key_sqlites_json_paths_cannot_name_is_left_to_python_there_only(tenant):
    put_all(tenant, VALUES)
    assert search(tenant, {"é": 1}) == ["key-accent"]
    assert search(tenant, {"v": {"$ne": None}, 'say "hi"': None}) == search(tenant, {"v": {"$ne": None}})
    assert in_sql({"é": 1}) == (connection.vendor == "postgresql")


def test_a_filtered_page_is_cut_by_the_database_in_one_query(tenant):
    put_all(tenant, {f"k{i:03}": {"kind": i % 10} for i in range(300)})
    with CaptureQueriesContext(connection) as queries:
        page = search(tenant, {"kind": 3}, limit=5, offset=10)
    selects = [q["sql"] for q in queries.captured_queries if "userdata_app_memoryitem" in q["sql"]]
    assert len(selects) == 1 and "LIMIT" in selects[0]
    everything = search(tenant, {"kind": 3})
    assert len(everything) == 30 and page == everything[10:15]


def test_pages_of_a_filtered_search_tile_its_whole_answer(tenant):
    put_all(tenant, {f"k{i:03}": {"n": i, "tag": "heron" if i % 3 else "crane"} for i in range(40)})
    for filter, query in [({"n": {"$gte": 7}}, None), ({"n": {"$lt": 30}, "tag": "heron"}, "heron crane")]:
        whole = search(tenant, filter, query=query)
        pages = [
            key for offset in range(0, 40, 6) for key in search(tenant, filter, limit=6, offset=offset, query=query)
        ]
        assert pages == whole and whole


def test_a_query_search_applies_the_filter_in_sql_too(tenant):
    put_all(tenant, {"a": {"t": "heron", "forgotten": True}, "b": {"t": "heron"}, "c": {"t": "heron", "forgotten": 1}})
    assert search(tenant, {"forgotten": {"$ne": True}}, query="heron") == ["b"]


# --- Differential: random values and filters, SQL against Python -----------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.sampled_from([0.5, 1.0, -0.0, 2.5]),
    st.sampled_from(["a", "B", "10", "é", ""]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2)
    ),
    max_leaves=4,
)
operators = st.dictionaries(
    st.sampled_from(sorted(filters.OPERATORS)),
    st.one_of(st.integers(-2, 3), st.sampled_from([0.5, "a", "B", "10"])),
    min_size=1,
    max_size=2,
)
equality_operators = st.dictionaries(st.sampled_from(["$eq", "$ne"]), json_values, min_size=1, max_size=1)
wanted = st.recursive(
    st.one_of(scalars, operators, equality_operators),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2)
    ),
    max_leaves=3,
)
filters_drawn = st.dictionaries(st.sampled_from(["x", "y", "z"]), wanted, min_size=1, max_size=2)
items = st.lists(st.dictionaries(st.sampled_from(["x", "y", "z"]), json_values, max_size=3), min_size=1, max_size=8)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=items, filter=filters_drawn)
def test_random_filters_select_in_sql_what_python_selects(tenant, values, filter):
    selects_in_sql_what_python_selects(tenant, values, filter)


@pytest.mark.slow
@pytest.mark.crosscheck
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=items, filter=filters_drawn)
def test_many_random_filters_select_in_sql_what_python_selects(tenant, values, filter):
    selects_in_sql_what_python_selects(tenant, values, filter)


def selects_in_sql_what_python_selects(tenant, values, filter) -> None:
    """The quick loop draws a few filters (the fixed cases above cover each operator); the slow set many."""
    MemoryItem.objects.all().delete()
    put_all(tenant, {f"k{i}": value for i, value in enumerate(values)})
    expected = {f"k{i}" for i, value in enumerate(values) if filters.value_matches(value, filter)}
    assert set(search(tenant, filter)) == expected
