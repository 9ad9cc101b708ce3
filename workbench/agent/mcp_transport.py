"""A JSON-RPC error reply for every stdin line of `workbench mcp` that is not a JSON-RPC message.

The SDK's stdio transport hands a line it cannot parse to the server as an exception item, and the server only
logs it: a client that sent a malformed request would wait for its reply forever. `answer_malformed_lines` wraps
the read stream: such an item is answered on the write stream (JSON-RPC 2.0: -32700 "Parse error" with id null
for text that is not JSON; -32600 "Invalid Request", with the request's id when it has a usable one, for JSON that
is not a message) and never reaches the server; every other item passes through unchanged.
"""
from __future__ import annotations

import contextlib

PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def error_for(exc: Exception) -> tuple[int, str, object]:
    """(code, message, id) of the reply to a line the transport could not turn into a message."""
    errors = []
    with contextlib.suppress(Exception):
        errors = exc.errors()                  # pydantic's ValidationError: what was wrong, with the input
    if not errors or any(e.get("type") == "json_invalid" for e in errors):
        return PARSE_ERROR, "Parse error: the line is not JSON; send one JSON-RPC 2.0 message per line", None
    request_id = None
    for e in errors:
        given = e.get("input")
        if isinstance(given, dict) and isinstance(given.get("id"), (str, int)) and not isinstance(given["id"], bool):
            request_id = given["id"]
            break
    return INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request, notification or response", request_id


class _AnsweringStream:
    def __init__(self, inner, write_stream):
        self._inner, self._write = inner, write_stream

    def __getattr__(self, name):               # last_context and the like: the wrapped stream's own
        return getattr(self._inner, name)

    async def _reply(self, exc: Exception) -> None:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        code, message, request_id = error_for(exc)
        error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
        await self._write.send(SessionMessage(error))

    async def receive(self):
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._reply(item)

    def __aiter__(self):
        return self

    async def __anext__(self):
        while True:
            item = await self._inner.__anext__()
            if not isinstance(item, Exception):
                return item
            await self._reply(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self):
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info):
        return await self._inner.__aexit__(*exc_info)


@contextlib.asynccontextmanager
async def answer_malformed_lines(read_stream, write_stream):
    """The read stream, less its malformed lines, each answered with a JSON-RPC error on `write_stream`."""
    yield _AnsweringStream(read_stream, write_stream)
