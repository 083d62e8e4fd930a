"""The printable subject export: times and dates as people read them, the exact value kept, field
names in words, text escaped."""

from userdata_app.admin.export_document import document_html_pieces


def document_html(value) -> str:
    return "".join(document_html_pieces(value))


def test_times_and_dates_read_as_dates_and_keep_their_iso_value():
    html = document_html({"created_at": "2026-11-26T06:29:01.123456+00:00", "due_on": "2026-12-26"})

    assert '<time datetime="2026-11-26T06:29:01.123456+00:00">26 Nov 2026, 06:29:01 UTC</time>' in html
    assert '<time datetime="2026-12-26">26 Dec 2026</time>' in html


def test_field_names_read_as_words_and_text_is_escaped():
    html = document_html({"adk_user_state": [{"text": "<b>hi</b>", "app_name": ""}], "memories": []})

    assert "<th>ADK user state</th>" in html and "<th>App name</th>" in html
    assert "&lt;b&gt;hi&lt;/b&gt;" in html and "<b>hi" not in html
    assert '<span class="empty">none</span>' in html  # an empty list says so
