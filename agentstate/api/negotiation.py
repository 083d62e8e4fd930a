"""DRF's content negotiation, reading the ``Accept`` header from the request's environ.

DRF reads it through ``request.headers``, which Django builds from every header of the request,
once per request, for that one header; no other part of a keyed API call reads it.
"""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation


class ContentNegotiation(DefaultContentNegotiation):
    def get_accept_list(self, request: Any) -> list[str]:
        """The media types the request accepts, as DRF lists them (``*/*`` when it names none)."""
        return [token.strip() for token in request.META.get("HTTP_ACCEPT", "*/*").split(",")]
