"""The printable subject export: times and dates as people read them, the exact value kept, field
names in words, text escaped; nested values indented below their label at any depth (issue 41:
nested tables once shrank labels to a letter a line), empty fields left out, the lists that hold
nothing named once. The browser test (tests/browser/test_export_document.py) measures the page."""

import json
import re

from userdata_app.admin.export_document import INDENTED_DEPTH, document_html_pieces


def document_html(value) -> str:
    return "".join(document_html_pieces(value))


def test_times_and_dates_read_as_dates_and_keep_their_iso_value():
    html = document_html({"created_at": "2026-11-26T06:29:01.123456+00:00", "due_on": "2026-12-26"})

    assert '<time datetime="2026-11-26T06:29:01.123456+00:00">26 Nov 2026, 06:29:01 UTC</time>' in html
    assert '<time datetime="2026-12-26">26 Dec 2026</time>' in html


def test_field_names_read_as_words_and_text_is_escaped():
    html = document_html({"adk_user_state": [{"text": "<b>hi</b>", "app_name": "weather"}], "memories": []})

    assert "ADK user state</dt>" in html and "App name:</span>" in html
    assert "&lt;b&gt;hi&lt;/b&gt;" in html and "<b>hi" not in html
    assert '<dd class="nothing">Nothing held for memories.</dd>' in html  # an empty list says so


def test_nested_values_go_below_their_label_never_into_a_table_beside_it():
    event = {"id": "evt-1", "content": {"role": "model", "parts": [{"function_call": {"name": "get_weather"}}]}}
    html = document_html({"adk_events": [{"seq": 1, "event": event}]})

    assert "<table" not in html
    assert '<dt class="below">Event</dt><dd class="below">' in html
    assert '<dt class="below">Content</dt><dd class="below">' in html
    assert "<dt>Number</dt><dd>1</dd>" in html  # a plain value stays beside its label


def test_short_objects_read_as_one_line_and_empty_fields_are_left_out():
    html = document_html({"durable_state": {"units": "metric", "last_city": "Paris"}, "ended_at": None, "metadata": {}})

    assert "<dt>Durable state</dt><dd>" in html
    assert re.sub(r"<[^>]+>", "", html) == "Durable stateUnits: metric · Last city: Paris"
    assert "Ended at" not in html and "Metadata" not in html


def test_what_nests_deeper_than_the_page_indents_reads_as_its_json_text():
    value = "the bottom"
    for level in range(INDENTED_DEPTH + 5):
        value = {f"step_{level}": value, "note": "padding the line past the one-line length of an object"}
    html = document_html(value)

    assert html.count('<dl class="fields">') == INDENTED_DEPTH + 1
    assert json.dumps("the bottom") in html.replace("&quot;", '"')
