"""The API's JSON renderer: DRF's output, encoded by orjson.

Encoding is most of what a large answer costs the server after the database (docs/PERFORMANCE.md,
latency). The answer holds the same JSON values as DRF's renderer writes (floats may spell an
exponent differently): compact, UTF-8, U+2028/U+2029 escaped, datetimes, decimals and other non-JSON
types through DRF's own encoder. Anything orjson refuses (integers past 64 bits, nesting past its
limit) and indented output go through DRF's renderer unchanged.
"""

from __future__ import annotations

import orjson
from rest_framework import renderers

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS


class JSONRenderer(renderers.JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None or self.get_indent(accepted_media_type, renderer_context or {}) is not None:
            return super().render(data, accepted_media_type, renderer_context)
        try:
            ret = orjson.dumps(data, default=self.encoder_class().default, option=_OPTIONS)
        except orjson.JSONEncodeError:
            return super().render(data, accepted_media_type, renderer_context)
        if b"\xe2\x80\xa8" in ret or b"\xe2\x80\xa9" in ret:
            ret = ret.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return ret
