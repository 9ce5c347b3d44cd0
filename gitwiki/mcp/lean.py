"""The owner's answers to a session's tool calls without the MCP SDK: each call's arguments checked against the
tool's `inputSchema` in tools.json (the SDK's own `tools/list`, kept equal to it by tests/mcp/test_early.py), the
same tool body called under the same lock (`mcp.wiki_tools`, `mcp.memory_tools`), and the answer written as the SDK
writes it, byte for byte (tests/mcp/test_lean.py holds the two side by side).

Importing the SDK costs 0.6–1 s of CPU, which an owner started by a session's first call paid before that call's
answer; this module imports none of it (pydantic_core, 20 ms, only to write JSON as pydantic writes it: its floats
are `1e-7` where json.dumps writes `1e-07`). What it cannot answer exactly as the SDK would, it declines (None), and
the SDK, imported then, answers: a call that fails validation (the SDK's words are pydantic's error text), an
argument the SDK would coerce (a string for a number), a call of the stateless era, a tool it does not know. A
tool argument the tool does not take is refused here, in `StrictServer`'s words.

`Validator` parses untrusted input (tests/mcp/test_lean.py has a property test): it accepts a value only where
pydantic's lax validation would take it as it is, with the two conversions pydantic makes then (an integer for a
`number` becomes a float; a string holding a JSON list or object, for a parameter that is not a plain string, is
parsed first, as the SDK's `pre_parse_json` does).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from gitwiki.errors import GitwikiError, NotFoundError, UsageError
from gitwiki.mcp.early import SERVER_NAME, STATELESS_VERSION
from gitwiki.mcp.hook_event import HOOK_TOOL, Runner
from gitwiki.mcp.hook_tool import HookTool
from gitwiki.mcp.wiki_tools import WikiTools
from gitwiki.wiki import Wiki

if TYPE_CHECKING:
    from gitwiki.mcp.memory_tools import MemoryTools

log = logging.getLogger("gitwiki.mcp")

# JSON-RPC error codes, as mcp_types has them
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# The stateless era's requests carry their protocol version, client and capabilities in params._meta, and its
# answers carry resultType and the server's name and version.
_PROTOCOL_META = "io.modelcontextprotocol/"
_STATELESS_META = frozenset(_PROTOCOL_META + k for k in ("protocolVersion", "clientInfo", "clientCapabilities"))
_SERVER_INFO = _PROTOCOL_META + "serverInfo"


def _stateless(meta: dict[str, Any]) -> bool:
    """A stateless-era request's `_meta` as Claude Code and the SDK's client send it: the era this server's
    early answers know, the client named, its capabilities given; anything else is the SDK's to judge."""
    info = meta.get(_PROTOCOL_META + "clientInfo")
    return (
        set(meta) == _STATELESS_META
        and meta[_PROTOCOL_META + "protocolVersion"] == STATELESS_VERSION
        and isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
        and isinstance(meta[_PROTOCOL_META + "clientCapabilities"], dict)
    )


class Answered(Protocol):
    """What a tool body returns: `wiki_tools.Answer`, or the memory tools' `replies.Reply` (the same two fields)."""

    @property
    def text(self) -> str: ...

    @property
    def data(self) -> dict[str, Any]: ...


class Bodies:
    """A server's tool bodies: the page tools and the memory tools, each tool a method named as the tool. The memory
    tools' modules (60-80 ms of imports) load with the first memory tool called."""

    def __init__(self, wiki: Wiki, hooks: Runner | None = None) -> None:
        self.pages = WikiTools(wiki)
        self.hook = HookTool(wiki, hooks)
        self._wiki = wiki
        self._memory: MemoryTools | None = None

    @property
    def memory(self) -> MemoryTools:
        if self._memory is None:
            from gitwiki.mcp.memory_tools import MemoryTools

            self._memory = MemoryTools(self._wiki)
        return self._memory

    def find(self, name: str) -> Callable[..., Answered] | None:
        if name.startswith("_"):
            return None
        if name == HOOK_TOOL:
            return self.hook.agent_hook
        found = getattr(self.memory if name.startswith("memory_") else self.pages, name, None)
        return found if callable(found) else None


def tool_bodies(wiki: Wiki, hooks: Runner | None = None) -> Bodies:
    """`hooks`: the hook code the `agent_hook` tool runs (`mcp.hook_tool`); None, it answers nothing."""
    return Bodies(wiki, hooks)


class Refused(NamedTuple):
    """A call refused with a JSON-RPC error, as the SDK refuses it."""

    code: int
    message: str


class _Decline(Exception):
    """The value is not one the lean path decides on: the SDK's."""


class Validator:
    """One tool's arguments against its inputSchema (a subset of JSON Schema: the one pydantic writes for the
    tools' parameters)."""

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self.name = name
        self.properties: dict[str, dict[str, Any]] = schema.get("properties", {})
        self.required = frozenset(schema.get("required", ()))

    def check(self, arguments: dict[str, Any]) -> dict[str, Any] | Refused | None:
        """The keyword arguments to call the tool body with; `Refused` for an argument it does not take; None when
        the SDK must decide (a value pydantic would refuse or convert)."""
        unknown = sorted(set(arguments) - set(self.properties))
        if unknown:
            takes = ", ".join(sorted(self.properties))
            return Refused(INVALID_PARAMS, f"{self.name} does not take {', '.join(unknown)}; it takes: {takes}")
        if not self.required <= set(arguments):
            return None
        out: dict[str, Any] = {}
        try:
            for key, value in arguments.items():
                schema = self.properties[key]
                out[key] = _value(schema, _pre_parsed(schema, value))
        except _Decline:
            return None
        return out


def _pre_parsed(schema: dict[str, Any], value: Any) -> Any:
    """The SDK's `pre_parse_json`: a string for a parameter that is not a plain `str` is parsed as JSON, and
    replaced when that gives anything but a string or a number."""
    if not isinstance(value, str) or _plain_string(schema):
        return value
    if not value.lstrip(" \t\n\r").startswith(_REPLACING):
        return value  # JSON text of a list, an object, true, false or null starts so; anything else stays as it is
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return value
    return value if isinstance(parsed, str | int | float) else parsed


# how the JSON text of the values `_pre_parsed` replaces a string with begins (after JSON's whitespace)
_REPLACING = ("[", "{", "t", "f", "n")


def _plain_string(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "string" and "enum" not in schema and "anyOf" not in schema


def _value(schema: dict[str, Any], value: Any) -> Any:
    """`value` as pydantic would hand it to the tool body; _Decline where that is not plain."""
    if "anyOf" in schema:
        # pydantic's smart union: a member that takes the value as it is, the exact type first
        members = schema["anyOf"]
        for exact in (True, False):
            for member in members:
                try:
                    if exact and not _exact(member, value):
                        continue
                    return _value({**member, **{k: v for k, v in schema.items() if k in _BOUNDS}}, value)
                except _Decline:
                    continue
        raise _Decline
    kind = schema.get("type")
    if "enum" in schema:
        if not isinstance(value, str) or value not in schema["enum"]:
            raise _Decline
        return value
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "null" and value is None:
        return None
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "integer" and type(value) is int:
        _bounded(schema, value)
        return value
    if kind == "number" and type(value) in (int, float):
        _bounded(schema, value)
        return float(value)
    if kind == "array" and isinstance(value, list):
        items = schema.get("items", {})
        return [_value(items, v) for v in value] if items else list(value)
    if kind == "object" and isinstance(value, dict) and not schema.get("properties"):
        return value
    raise _Decline


_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _exact(schema: dict[str, Any], value: Any) -> bool:
    """Whether `value` is of the member's own type (pydantic's smart union prefers such a member)."""
    kind = schema.get("type")
    exact = {"string": str, "boolean": bool, "integer": int, "number": float, "array": list, "object": dict}
    return (kind == "null" and value is None) or (kind in exact and type(value) is exact[kind])


def _bounded(schema: dict[str, Any], value: float) -> None:
    if value != value or value in (float("inf"), float("-inf")):
        raise _Decline
    if "minimum" in schema and not value >= schema["minimum"]:
        raise _Decline
    if "maximum" in schema and not value <= schema["maximum"]:
        raise _Decline
    if "exclusiveMinimum" in schema and not value > schema["exclusiveMinimum"]:
        raise _Decline
    if "exclusiveMaximum" in schema and not value < schema["exclusiveMaximum"]:
        raise _Decline


class LeanTools:
    """The tool calls a session's lines hold, answered without the SDK where they can be (see the module's
    docstring). `schemas`: tools.json's `tools/list` tools, each answered by the body of its name."""

    def __init__(self, bodies: Bodies, schemas: Iterable[dict[str, Any]], serial: threading.Lock, version: str) -> None:
        self._serial = serial
        self._version = version  # the server's, which the stateless era's answers name
        self._bodies = bodies
        self._validators = {
            t["name"]: Validator(t["name"], t.get("inputSchema", {}))
            for t in schemas
            if isinstance(t, dict) and isinstance(t.get("name"), str)
        }

    def answer(self, message: dict[str, Any], opened: bool = True) -> bytes | None:
        """The answer line to a `tools/call` request (a checked JSON-RPC message), or None: the SDK's. `opened`:
        whether the session's `initialize` was answered (a call of the handshake era before it is the SDK's)."""
        params = message.get("params")
        if message.get("method") != "tools/call" or "id" not in message or not isinstance(params, dict):
            return None
        meta = params.get("_meta", {})
        if set(params) - {"name", "arguments", "_meta"} or not isinstance(meta, dict):
            return None
        stateless = any(str(k).startswith(_PROTOCOL_META) for k in meta)
        if (stateless and not _stateless(meta)) or not (stateless or opened):
            return None
        arguments = params.get("arguments")
        arguments = {} if arguments is None else arguments
        name = params.get("name")
        validator = self._validators.get(name) if isinstance(name, str) else None
        if validator is None or not isinstance(arguments, dict):
            return None
        checked = validator.check(arguments)
        if checked is None:
            return None
        if isinstance(checked, Refused):
            log.info(
                "%s refused: unknown arguments %s", validator.name, sorted(set(arguments) - set(validator.properties))
            )
            return _error(message["id"], checked)
        format = checked.pop("format", "text")
        body = self._bodies.find(validator.name)
        if body is None:
            return None
        outcome = self._call(validator.name, body, checked)
        if isinstance(outcome, Refused):
            return _error(message["id"], outcome)
        text = json.dumps(outcome.data, ensure_ascii=False) if format == "json" else outcome.text
        # the serialized JSON as text too, as `mcp.server.guarded` returns it; keys in the order the SDK writes them
        result: dict[str, Any] = {"content": [{"text": text, "type": "text"}], "isError": False}
        if stateless:
            result["resultType"] = "complete"
        if format == "json":
            result["structuredContent"] = outcome.data
        if stateless:
            result["_meta"] = {_SERVER_INFO: {"name": SERVER_NAME, "version": self._version}}
        return encode({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _call(self, name: str, body: Callable[..., Answered], arguments: dict[str, Any]) -> Answered | Refused:
        """`mcp.server.guarded`'s call: one at a time (but the hooks' tool, whose search asks this server), gitwiki
        errors as the JSON-RPC errors it raises."""
        with self._serial if name != HOOK_TOOL else contextlib.nullcontext():
            started = time.perf_counter()
            try:
                return body(**arguments)
            except (UsageError, NotFoundError) as e:
                log.info("%s refused: %s", name, e)
                return Refused(INVALID_PARAMS, str(e))
            except GitwikiError as e:
                log.warning("%s failed: %s", name, e)
                return Refused(INTERNAL_ERROR, str(e))
            except Exception as e:
                log.exception("%s crashed", name)
                return Refused(
                    INTERNAL_ERROR,
                    f"internal error in {name} ({type(e).__name__}); details are in the server log on stderr",
                )
            finally:
                log.debug("%s took %.1f ms", name, (time.perf_counter() - started) * 1000)


def _error(request_id: Any, refused: Refused) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "error": {"code": refused.code, "message": refused.message}})


def encode(message: dict[str, Any]) -> bytes:
    """One line as the SDK writes it (pydantic's JSON: compact, UTF-8, its float forms)."""
    return _to_json()(message) + b"\n"


@functools.cache
def _to_json() -> Callable[[Any], bytes]:
    """pydantic_core's `to_json`, from its compiled module without the package's `__init__` (`core_schema`: ~10 ms
    of a starting owner's first answer)."""
    from gitwiki.native import extension

    module = extension("pydantic_core._pydantic_core")
    if module is None:
        from pydantic_core import to_json

        return to_json
    found: Callable[[Any], bytes] = module.to_json
    return found
