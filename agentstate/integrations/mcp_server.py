"""agentstate as an MCP server: one person's memory and history as tools any MCP client can call
(a desktop client, ADK's ``McpToolset``, the Agents SDK's ``MCPServerStdio`` /
``MCPServerStreamableHttp``). ``agentstate mcp`` runs it (docs/CLIENT.md, "MCP server").

It is a client of the REST API (``AsyncAgentStateClient``), with no Django in its process, so every
rule the API keeps (tenancy, person keys, holds, the access log of compliance reads) holds here
by construction. Over stdio the key comes from ``AGENTSTATE_API_KEY``; over streamable HTTP (the
SDK's ASGI app under uvicorn, its own process: it cannot live in the WSGI service) each request
brings its caller's key as ``Authorization: Bearer <key>``, sent on as the API's ``X-Api-Key``.
The person is the key's own (a person-scoped key) or the one fixed at start (``--user``); no tool
takes a user id, and an argument a tool does not declare is refused, not ignored. With ``--embed``
the process embeds (as ``AgentStateStore(index=...)`` does): ``remember`` stores the text's vector,
``search_memory`` sends the query's and the server ranks by meaning; without it, by words.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import json
import os
import sys
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from agentstate.client import AgentStateError, AsyncAgentStateClient, NetworkError
from agentstate.client.clients import AsyncEndpoints
from agentstate.client.loops import LoopClients
from agentstate.integrations.store_batch import Embedder, StoreBatch, user_namespace, with_vectors

API_KEY_ENV = "AGENTSTATE_API_KEY"
URL_ENV = "AGENTSTATE_URL"
NO_KEY = "No API key: send your agentstate API key as 'Authorization: Bearer <key>'."
NO_PERSON = (
    "This key covers a whole tenant and the server was given no person: start it with --user, or use "
    "a key made for one person (create_api_key --user)."
)
MEMORY_LABEL = "memories"  # remember's namespace: ("users", <user_id>, "memories")
MAX_KEYS = 256  # callers whose connections an HTTP server keeps
MAX_RESULTS = 50
MAX_HISTORY = 100


@dataclass(frozen=True)
class Settings:
    """Where the API is and whose data the tools reach: ``api_key`` None means each HTTP request's
    bearer key; ``user_id`` None means the key's own person."""

    api_url: str
    api_key: str | None = None
    user_id: str | None = None
    embedder: Embedder | None = None  # None: search_memory is the word search


@dataclass(frozen=True)
class Caller:
    client: AsyncEndpoints  # an AsyncAgentStateClient, its methods awaited
    store: StoreBatch
    user_id: str

    def namespace(self, labels: list[str]) -> list[str]:
        """The person's namespace with ``labels`` under it: no label reaches another person's."""
        return list(user_namespace(self.user_id, *labels))


@dataclass
class _Kept:
    clients: LoopClients[AsyncAgentStateClient]
    store: StoreBatch
    person: str | None = None  # the key's own, once asked: a key's person never changes


class _Connections:
    """The API clients of each key the server was called with, kept between tool calls (a call
    reuses the connection of the last) and closed with their event loop; at most ``MAX_KEYS``
    keys, the least recently used closed first. A key revoked since it was kept is refused by the
    API on the call itself."""

    def __init__(self, api_url: str) -> None:
        self._api_url = api_url
        self._by_key: OrderedDict[str, _Kept] = OrderedDict()

    async def of(self, key: str) -> _Kept:
        kept = self._by_key.get(key)
        if kept is None:
            make = functools.partial(AsyncAgentStateClient, self._api_url, key)
            kept = self._by_key[key] = _Kept(LoopClients(make), StoreBatch(self._api_url, key))
            if len(self._by_key) > MAX_KEYS:
                _, dropped = self._by_key.popitem(last=False)
                await dropped.clients.aclose()
                await dropped.store.aclose()
        self._by_key.move_to_end(key)
        return kept


def bearer_key(authorization: str) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header; None for any other."""
    scheme, _, key = authorization.partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None


def _bearer(ctx: Context) -> str:
    key = bearer_key((ctx.headers or {}).get("authorization", ""))
    if key is None:
        raise ToolError(NO_KEY)
    return key


def _refused(exc: AgentStateError) -> ToolError:
    """A REST refusal as the tool's error: the server's own message, with its status and code."""
    if isinstance(exc, NetworkError):
        return ToolError(f"agentstate could not be reached: {exc.message}")
    status = f"{exc.status_code} {exc.code}" if exc.code else str(exc.status_code)
    return ToolError(f"agentstate refused ({status}): {exc.message}")


@contextlib.contextmanager
def _embedding() -> Iterator[None]:
    """The embedder's own failure as the tool's error, with its message."""
    try:
        yield
    except ToolError:
        raise
    except Exception as exc:
        raise ToolError(f"The embedder failed: {type(exc).__name__}: {exc}") from None


WORDS = """Search this person's memories (what was remembered here and what their agents stored in
agentstate's memory store) for ANY of the query's words: whole words, any case, no stemming.
Best first: more of the words, then rarer ones, then the newest. Each memory has its namespace
(labels under the person), key, value, update time and score."""
MEANING = """Search this person's memories (what was remembered here and what their agents stored in
agentstate's memory store) by meaning: best first by the similarity of their text to the query's
(score, 1 the closest); memories stored without a vector follow, score null. Each memory has its
namespace (labels under the person), key, value, update time and score."""


def build_server(settings: Settings) -> MCPServer:
    """The MCP server with its five tools, each a REST call or two as ``settings`` says who calls."""

    connections = _Connections(settings.api_url)

    @contextlib.asynccontextmanager
    async def caller(ctx: Context) -> AsyncIterator[Caller]:
        key = settings.api_key or _bearer(ctx)
        try:
            kept = await connections.of(key)
            client: AsyncEndpoints = kept.clients.get()  # its methods' results are awaited
            if settings.user_id is None and kept.person is None:
                kept.person = (await client.key_get())["user_id"]
            user_id = settings.user_id or kept.person
            if user_id is None:
                raise ToolError(NO_PERSON)
            yield Caller(client, kept.store, user_id)
        except AgentStateError as exc:
            raise _refused(exc) from None

    server = MCPServer(
        "agentstate",
        instructions="One person's memory and conversation history, kept by agentstate. Search the "
        "memory before asking the person again; remember what they want kept; forget what they ask "
        "you to; read a session's recent messages to pick a conversation up.",
    )
    server.middleware.append(_undeclared_arguments_refused(server))
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=reads, description=WORDS if settings.embedder is None else MEANING)
    async def search_memory(
        query: Annotated[str, Field(min_length=1, max_length=1000, description="What to look for.")],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=MAX_RESULTS, description="How many memories at most.")] = 10,
    ) -> dict[str, Any]:
        if settings.embedder is not None:
            with _embedding():
                vector = await settings.embedder.query(query)
            search = {"op": "search", "query": query, "vector": vector, "limit": limit}
            async with caller(ctx) as who:
                [items] = await who.store.abatch_raw(
                    [{**search, "namespace_prefix": who.namespace([])}], user_id=who.user_id
                )
            return {"memories": [_shown(item) for item in items]}
        async with caller(ctx) as who:
            page = await who.client.memory_search(who.user_id, query, limit=limit)
        hits = [hit.model_dump() | {"updated_at": hit.updated_at.isoformat()} for hit in page.results]
        return {"memories": [_shown(hit) for hit in hits]}

    @server.tool(annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False))
    async def remember(
        text: Annotated[str, Field(min_length=1, max_length=10_000, description="What to remember.")],
        ctx: Context,
        key: Annotated[
            str | None,
            Field(min_length=1, max_length=255, description="A name for it: a memory of that name is replaced."),
        ] = None,
    ) -> dict[str, Any]:
        """Store a memory of this person ({"text": text}) under the namespace ["memories"]; a new key
        unless one is given. search_memory finds it; forget deletes it."""
        key = key or uuid.uuid4().hex
        async with caller(ctx) as who:
            op = {"op": "put", "namespace": who.namespace([MEMORY_LABEL]), "key": key, "value": {"text": text}}
            with _embedding():
                ops = await with_vectors(settings.embedder, [op])
            await who.store.abatch_raw(ops, user_id=who.user_id)
        return {"namespace": [MEMORY_LABEL], "key": key}

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False))
    async def forget(
        key: Annotated[str, Field(min_length=1, max_length=255, description="The memory's key.")],
        ctx: Context,
        namespace: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=255)]],
            Field(max_length=10, description="The memory's namespace as search_memory gives it."),
        ] = [MEMORY_LABEL],  # noqa: B006 (pydantic copies defaults; the schema shows it)
    ) -> dict[str, Any]:
        """Delete one memory of this person, named by its namespace and key as search_memory gives
        them. A memory under a legal hold is not deleted: the error names the hold."""
        async with caller(ctx) as who:
            full = who.namespace(namespace)
            get = {"op": "get", "namespace": full, "key": key, "refresh_ttl": False}
            found, _ = await who.store.abatch_raw(
                [get, {"op": "put", "namespace": full, "key": key, "value": None}], user_id=who.user_id
            )
        if found is None:
            raise ToolError(f"No memory {key!r} in namespace {namespace}: nothing was deleted.")
        return {"deleted": {"namespace": namespace, "key": key}}

    @server.tool(annotations=reads)
    async def recent_history(
        session_id: Annotated[str, Field(min_length=1, max_length=255, description="The session's id.")],
        ctx: Context,
        count: Annotated[int, Field(ge=1, le=MAX_HISTORY, description="How many of the last messages.")] = 20,
    ) -> dict[str, Any]:
        """The last `count` messages of one of this person's sessions, oldest first: each with its
        seq (its place in the session), role, type, name, content and time."""
        async with caller(ctx) as who:
            messages = await who.client.message_recent(who.user_id, session_id, count)
        fields = {"seq", "role", "type", "name", "content", "created_at"}
        return {"session_id": session_id, "messages": [m.model_dump(mode="json", include=fields) for m in messages]}

    @server.tool(annotations=reads)
    async def list_sessions(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=MAX_HISTORY, description="How many sessions at most.")] = 20,
        cursor: Annotated[str | None, Field(max_length=1000, description="next_cursor of the last call.")] = None,
    ) -> dict[str, Any]:
        """This person's sessions, a page at a time (pass next_cursor back for the next): each with
        its id, agent, workspace, times (ended_at set once ended) and message count."""
        async with caller(ctx) as who:
            page = await who.client.session_list(user_id=who.user_id, page_size=limit, cursor=cursor)
        fields = {"session_id", "agent_id", "workspace_id", "created_at", "updated_at", "ended_at", "message_count"}
        return {
            "sessions": [s.model_dump(mode="json", include=fields) for s in page.results],
            "next_cursor": page.next_cursor,
        }

    return server


def _shown(hit: dict[str, Any]) -> dict[str, Any]:
    """A memory as search_memory answers it, whichever search found it: its labels under the person."""
    return {"namespace": hit["namespace"][2:], **{key: hit[key] for key in ("key", "value", "updated_at", "score")}}


def embedder_named(name: str, dims: int | None = None) -> Embedder:
    """The embedder ``module:attribute`` names (``--embed``); ValueError says why it cannot be."""
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"--embed {name!r}: name it as module:callable (my_pkg.embeddings:embed).")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except Exception as exc:  # an import error, a missing name, or the module failing as it loads
        raise ValueError(f"--embed {name!r} cannot be loaded: {type(exc).__name__}: {exc}") from None
    if not (callable(found) or hasattr(found, "aembed_documents")):
        raise ValueError(f"--embed {name!r} is a {type(found).__name__}: not a function of texts, nor an Embeddings.")
    return Embedder(found, dims)


def _undeclared_arguments_refused(server: MCPServer) -> ServerMiddleware[Any]:
    """Middleware: a tool call with an argument its tool does not declare (a ``user_id``, a typo)
    is an error naming it, where the SDK would drop it unseen."""

    async def refuse(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call" and isinstance(ctx.params, dict):
            declared = {tool.name: set(tool.input_schema.get("properties", {})) for tool in await server.list_tools()}
            arguments = ctx.params.get("arguments") or {}
            takes = declared.get(str(ctx.params.get("name")))
            unknown = sorted(set(arguments) - takes) if takes is not None and isinstance(arguments, dict) else []
            if unknown:
                text = f"Unknown argument(s) {', '.join(unknown)}: this tool takes {', '.join(sorted(takes or ()))}."
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return await call_next(ctx)

    return refuse


def http_app(server: MCPServer, *, host: str) -> Callable[..., Awaitable[None]]:
    """The streamable-HTTP ASGI app at ``/mcp``, stateless (any of several processes behind a proxy
    answers any request), refusing a request without a bearer key with 401 before MCP reads it;
    ``/livez`` answers a proxy's health check without a key."""

    @server.custom_route("/livez", methods=["GET"])
    async def livez(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    # No DNS-rebinding check of the Host header (the SDK's default on a loopback address): behind a
    # proxy the Host is the public name, and every call needs an agentstate key the page would
    # have to hold already, so a rebound page reaches nothing it could not reach itself.
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        host=host,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    async def bearer_required(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] != "/livez":
            authorization = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            if bearer_key(authorization) is None:
                body = json.dumps({"error": {"code": "not_authenticated", "message": NO_KEY}}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return bearer_required


def main(argv: list[str]) -> None:
    """``agentstate mcp``: the server over stdio (the key from AGENTSTATE_API_KEY), or over HTTP
    with ``--http`` (each request's bearer key)."""
    parser = argparse.ArgumentParser(prog="agentstate mcp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get(URL_ENV, "http://127.0.0.1:8000"), help="agentstate's API")
    parser.add_argument("--user", help="the person whose memory and history the tools reach (with a tenant key)")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="with --http: the address to listen on")
    parser.add_argument("--port", type=int, default=8100, help="with --http: the port to listen on")
    parser.add_argument(
        "--embed",
        metavar="MODULE:CALLABLE",
        help="search by meaning: the embedder this process imports (installed, or on PYTHONPATH) and "
        'calls, what LangGraph\'s IndexConfig["embed"] takes (a function of a list of texts returning '
        "one vector each, sync or async, or a LangChain Embeddings); remember stores each text's "
        "vector, search_memory ranks by cosine similarity. Without it, search_memory is a word search",
    )
    parser.add_argument("--dims", type=int, help="with --embed: the vectors' length (another is a tool error)")
    args = parser.parse_args(argv)
    if args.dims is not None and not args.embed:
        parser.error("--dims is the length of --embed's vectors: give --embed too.")
    embedder = None
    if args.embed:
        try:
            embedder = embedder_named(args.embed, args.dims)
        except ValueError as exc:
            parser.error(str(exc))
    if args.http:
        import uvicorn

        server = build_server(Settings(api_url=args.url, user_id=args.user, embedder=embedder))
        # An idle connection kept longer than a proxy keeps it (gunicorn's 75 s; uvicorn's default is
        # 5 s), so the proxy closes first and never sends a tool call into a closing socket.
        app = http_app(server, host=args.host)
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", timeout_keep_alive=75)
        return
    key = os.environ.get(API_KEY_ENV)
    if not key:
        sys.exit(f"agentstate mcp over stdio takes the API key from {API_KEY_ENV}.")
    build_server(Settings(api_url=args.url, api_key=key, user_id=args.user, embedder=embedder)).run("stdio")
