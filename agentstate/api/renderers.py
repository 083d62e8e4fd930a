"""The API's JSON renderer: DRF's output, encoded by orjson.

Encoding is most of what a large answer costs the server after the database (docs/PERFORMANCE.md,
latency). The answer holds the same JSON values as DRF's renderer writes (floats may spell an
exponent differently): compact, UTF-8, U+2028/U+2029 escaped, datetimes, decimals and other non-JSON
types through DRF's own encoder. Anything orjson refuses (integers past 64 bits, nesting past its
limit, a lone surrogate stored before the input rules refused it) and indented output go through
DRF's renderer (ASCII-escaped where a lone surrogate would not encode). JSON text the database already
wrote (``RawJSON``, from ``agentstate.api.json_rows``) is embedded as it is, or decoded for DRF's
renderer.

``MsgpackRenderer`` answers the views that carry bytes (LangGraph's checkpoints) in msgpack when a
caller asks for it, so the bytes travel as they are rather than in base64 inside JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson
import ormsgpack
from rest_framework import renderers
from rest_framework.utils.encoders import JSONEncoder

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS


class RawJSON:
    """JSON text to embed in an answer as it is."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class Encoder(JSONEncoder):
    """DRF's encoder, for the answers orjson does not write."""

    def default(self, obj: Any) -> Any:
        if isinstance(obj, RawJSON):
            return json.loads(obj.text)
        return super().default(obj)


class JSONRenderer(renderers.JSONRenderer):
    encoder_class = Encoder

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping[str, Any] | None = None
    ) -> bytes:
        # The ignore: djangorestframework-stubs want a media type; DRF's own render passes None too.
        indent = self.get_indent(accepted_media_type, renderer_context or {})  # type: ignore[arg-type]
        if data is None or indent is not None:
            return self._render_with_drf(data, accepted_media_type, renderer_context)
        try:
            ret = orjson.dumps(data, default=_default, option=_OPTIONS)
        except orjson.JSONEncodeError:
            return self._render_with_drf(data, accepted_media_type, renderer_context)
        if b"\xe2\x80\xa8" in ret or b"\xe2\x80\xa9" in ret:
            ret = ret.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return ret

    def _render_with_drf(
        self, data: Any, accepted_media_type: str | None, renderer_context: Mapping[str, Any] | None
    ) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:  # a lone surrogate stored before the rules refused it: sent as its escape
            return _AsciiRenderer().render(data, accepted_media_type, renderer_context)


class _AsciiRenderer(renderers.JSONRenderer):
    """DRF's renderer writing every non-ASCII character as its escape."""

    encoder_class = Encoder
    ensure_ascii = True


def _default(obj: Any) -> Any:
    if isinstance(obj, RawJSON):
        return orjson.Fragment(obj.text)
    return Encoder().default(obj)


MSGPACK_BIG_INT = 1  # msgpack extension type: an integer past 64 bits, as its decimal digits


class MsgpackRenderer(renderers.BaseRenderer):
    """msgpack, asked for with ``Accept: application/msgpack``: bytes as msgpack's binary, the rest as
    JSON would carry it; an integer msgpack cannot hold (past 64 bits) is extension type
    ``MSGPACK_BIG_INT``, its decimal digits."""

    media_type = "application/msgpack"
    format = "msgpack"
    charset = None
    render_style = "binary"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping[str, Any] | None = None
    ) -> bytes:
        if data is None:
            return b""
        return ormsgpack.packb(data, default=_msgpack_default, option=ormsgpack.OPT_PASSTHROUGH_BIG_INT)


def _msgpack_default(obj: Any) -> Any:
    if isinstance(obj, int):
        return ormsgpack.Ext(MSGPACK_BIG_INT, str(obj).encode("ascii"))
    raise TypeError(f"{type(obj).__name__} is not carried in msgpack")
