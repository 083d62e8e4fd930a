"""One HTTP exchange described without I/O: what to send, whether it may be retried, how to read it.

The sync and async clients share everything here; each only moves the bytes and sleeps between
attempts, so both behave the same by construction.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
import pydantic

from agentstate.client.errors import AgentStateError, error_from_response, network_error
from agentstate.client.models import Page

T = TypeVar("T")
M = TypeVar("M", bound=pydantic.BaseModel)

API = "/api/v1"
FIRST_BACKOFF_SECONDS = 0.2  # doubles at each further retry
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})
# Failures before the request could reach the server: retrying cannot apply anything twice.
NOTHING_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def segment(value: str) -> str:
    """Percent-encode one path segment (``/`` included); ``.`` and ``..`` too, or URL normalising would drop them."""
    if not isinstance(value, str):
        raise TypeError(f"identifiers are strings, not {type(value).__name__}")
    encoded = quote(value, safe="")
    return encoded.replace(".", "%2E") if encoded in {".", ".."} else encoded


@functools.lru_cache(maxsize=1024)  # a caller asks for the same few again and again
def session_url(user_id: str, session_id: str, *rest: str | int) -> str:
    """URL of a session or of something under it; ``rest`` are already-safe path parts."""
    parts = [API, "users", segment(user_id), "sessions", segment(session_id), *map(str, rest)]
    return "/".join(parts) + "/"


def user_data_url(user_id: str, key: str | None = None) -> str:
    return f"{API}/users/{segment(user_id)}/data/" + (f"{segment(key)}/" if key is not None else "")


def if_match(expected_version: int | None) -> dict[str, str] | None:
    """The If-Match header for a version the caller last saw (the server's ETag is the quoted version)."""
    return None if expected_version is None else {"If-Match": f'"{expected_version}"'}


def query(**params: Any) -> dict[str, str]:
    """Query parameters without the unset ones, in the server's spelling (booleans as true/false)."""
    encoded = {}
    for name, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif hasattr(value, "isoformat"):
            value = value.isoformat()
        encoded[name] = str(value)
    return encoded


def body(response: httpx.Response) -> Any:
    """The JSON of an answer; anything else means ``base_url`` does not point at agentstate."""
    try:
        return response.json()
    except ValueError:
        kind = response.headers.get("Content-Type", "no content type")
        raise AgentStateError(
            f"expected JSON from {response.request.url}, got {kind}", status_code=response.status_code
        ) from None


def validated(cls: type[M], data: Any) -> M:
    try:
        return cls.model_validate(data)
    except pydantic.ValidationError as exc:
        raise AgentStateError(f"unexpected answer shape for {cls.__name__}: {exc}") from None


def parsed(cls: type[M], response: httpx.Response) -> M:
    """``response`` read straight from its bytes into ``cls`` (pydantic's own JSON parser: a page
    of messages costs a fraction of ``json.loads`` then validation); an answer that does not fit
    takes the slow path, which says whether it was not JSON or not the expected shape."""
    try:
        return cls.model_validate_json(response.content)
    except pydantic.ValidationError:
        return validated(cls, body(response))


def as_model(cls: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: parsed(cls, response)


def as_page(cls: type[M]) -> Callable[[httpx.Response], Page[M]]:
    return lambda response: parsed(Page[cls], response)  # type: ignore[valid-type]


def as_json(response: httpx.Response) -> Any:
    return body(response)


def as_nothing(response: httpx.Response) -> None:
    return None


@functools.lru_cache(maxsize=1024)
def _url(base_url: str, path: str, query: tuple[tuple[str, str], ...]) -> httpx.URL:
    """``path`` with ``query`` on ``base_url``, parsed: a caller asks the same few URLs again and
    again (a session's messages, its pop), and httpx checks each character of a URL it parses,
    which cost a long session URL more than the rest of the request's building. httpx takes a
    parsed URL as it is."""
    url = base_url + path.lstrip("/")
    return httpx.URL(url + "?" + str(httpx.QueryParams(query)) if query else url)


@dataclasses.dataclass(frozen=True)
class Call(Generic[T]):
    """A request and the way to read its answer. ``idempotent`` None means: decided by the method."""

    method: str
    url: str
    parse: Callable[[httpx.Response], T]
    params: dict[str, str] | None = None
    json: Any = None
    headers: dict[str, str] | None = None
    idempotent: bool | None = None
    answers: frozenset[int] = frozenset()  # error statuses that carry an answer, not an error

    def request_on(self, base_url: str) -> dict[str, Any]:
        """Keyword arguments for ``httpx.Client.request`` / ``httpx.AsyncClient.request`` on the
        client's ``base_url`` (which httpx ends with ``/``): the whole URL, query and all, parsed
        once (``_url``). A path and parameters apart, httpx parsed three URLs: a fifth of a small
        call's time in the caller."""
        url = _url(base_url, self.url, tuple(self.params.items()) if self.params else ())
        return {"method": self.method, "url": url, "json": self.json, "headers": self.headers}

    def with_cursor(self, cursor: str) -> Call[T]:
        return dataclasses.replace(self, params={**(self.params or {}), "cursor": cursor})

    def result(self, response: httpx.Response) -> T:
        """The parsed answer, or the typed error for it."""
        if response.is_error and response.status_code not in self.answers:
            raise error_from_response(response)
        return self.parse(response)

    def may_retry(self, error: httpx.TransportError) -> bool:
        """Idempotent requests retry any transport failure; others only one that sent nothing."""
        idempotent = self.method in IDEMPOTENT_METHODS if self.idempotent is None else self.idempotent
        return idempotent or isinstance(error, NOTHING_SENT)

    def attempts(self, retries: int) -> Iterator[Attempt]:
        """The attempts a transport makes: the first at once, then up to ``retries`` with a growing pause."""
        for number in range(retries + 1):
            delay = 0.0 if number == 0 else FIRST_BACKOFF_SECONDS * 2 ** (number - 1)
            yield Attempt(call=self, delay=delay, last=number == retries)


@dataclasses.dataclass(frozen=True)
class Attempt:
    """Context for one try: swallows a transport failure that may be retried, wraps the final one."""

    call: Call[Any]
    delay: float
    last: bool

    def __enter__(self) -> Attempt:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        if not isinstance(exc, httpx.TransportError):
            return False
        if self.last or not self.call.may_retry(exc):
            raise network_error(exc) from exc
        return True
