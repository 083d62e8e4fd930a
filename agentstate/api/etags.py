"""ETags of sessions and rounds: the quoted ``version`` counter, compared strongly.

A write carrying ``If-Match`` passes the version it names to the service as
``expected_version``; the service's compare-and-set turns a stale one into a 412. Django's
ConditionalGetMiddleware is not used: its weak ETags never satisfy If-Match.
"""

from __future__ import annotations

import re

from rest_framework.request import Request
from rest_framework.response import Response

from agentstate.exceptions import PreconditionFailed

ANY = -1  # "If-Match: *": any current version will do
_STRONG_ETAG = re.compile(r'"(\d{1,10})"')


def etag_of(version: int) -> str:
    return f'"{version}"'


def with_etag(response: Response, version: int) -> Response:
    response["ETag"] = etag_of(version)
    return response


def if_match_version(request: Request) -> int | None:
    """The version named by ``If-Match``: None without the header, ``ANY`` for ``*``.

    One strong ETag is accepted; anything else can never match the stored version, so it is a 412.
    """
    header = request.META.get("HTTP_IF_MATCH")  # not request.headers: built from every header
    if header is None:
        return None
    header = header.strip()
    if header == "*":
        return ANY
    match = _STRONG_ETAG.fullmatch(header)
    if match is None:
        raise PreconditionFailed('If-Match must be one ETag as sent by the server (e.g. "3"), or *.')
    return int(match.group(1))
