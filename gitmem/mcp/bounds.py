"""Bounds on every argument of the ``tur mcp`` tools, checked before gitmem sees the value.

A tool's arguments come from a client that may send anything: a NUL in a path, a
5,000-character path, a 10 MB query. Each argument type here carries its bounds in the
input schema (``maxLength``, ``minimum``, ``maximum``: a client can see them) and checks
them in pydantic's validation of the call, so a value out of bounds is answered at once
with one line (``argument file: a path holds no NUL or control character``) instead of an
internal error, or seconds of work that hold up every other call.

The numbers:

- :data:`MAX_CONTENT_CHARS`: a record is at most 1 MiB of YAML (``gitmem.record.limits``)
  and a character takes at least one byte, so longer content can never be stored.
- :data:`MAX_PATH_CHARS` and :data:`MAX_NAME_BYTES`: Linux's ``PATH_MAX`` (4096 bytes) and
  ``NAME_MAX`` (255 bytes), past which the file system refuses the path anyway.
- :data:`MAX_QUERY_CHARS`, :data:`MAX_REASON_CHARS`, :data:`MAX_ID_CHARS`,
  :data:`MAX_NAME_CHARS`: generous for what each holds (a task description, a sentence,
  an id of ``<type>-<16 hex>`` or an imported one, an agent's name).
- :data:`MAX_AGENTS`: the names one ``for`` argument may give (each a name of at most 40
  characters, or a comma list within :data:`MAX_NAME_CHARS`).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

from gitmem.vocabulary import MemoryType, RelationType, Status

__all__ = [
    "MAX_AGENTS",
    "MAX_CONTENT_CHARS",
    "MAX_FRAME_BYTES",
    "MAX_HTTP_BODY_BYTES",
    "MAX_ID_CHARS",
    "MAX_NAME_BYTES",
    "MAX_NAME_CHARS",
    "MAX_PATH_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_REASON_CHARS",
    "MAX_TOKEN_BUDGET",
    "MAX_TOP_K",
    "AgentArg",
    "AnchorArg",
    "ContentArg",
    "FileArg",
    "ForArg",
    "IdArg",
    "OptionalRelationArg",
    "QueryArg",
    "ReasonArg",
    "StatusArg",
    "TypeArg",
    "check_id",
    "check_query",
]

MAX_CONTENT_CHARS = 1 << 20
MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255
MAX_QUERY_CHARS = 10_000
MAX_REASON_CHARS = 10_000
MAX_ID_CHARS = 200
MAX_NAME_CHARS = 200
MAX_AGENTS = 64
MAX_FRAME_BYTES = 32 << 20
"""Largest JSON-RPC frame read (bytes of one line): room for content of
:data:`MAX_CONTENT_CHARS` characters written as JSON ``\\u`` escapes."""
MAX_TOP_K = 1000
"""Most hits one recall returns (``recall``'s ``top_k``, the HTTP API's ``limit``)."""
MAX_TOKEN_BUDGET = 10_000_000
"""Largest token budget of a wake (``wake``'s ``token_budget``, the HTTP API's ``budget``)."""
MAX_HTTP_BODY_BYTES = 256 << 10
"""Largest body of a ``tur serve`` API request (bytes): a query of :data:`MAX_QUERY_CHARS`
characters fits even with every character a JSON ``\\u`` surrogate pair (12 bytes each).
MCP requests over HTTP have the SDK's own cap (4 MiB)."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _path(value: str | None) -> str | None:
    """A path without NUL or control characters whose components fit ``NAME_MAX``."""
    if value is None:
        return None
    if _CONTROL.search(value):
        raise ValueError("a path holds no NUL or control character")
    path = value.partition("#")[0]
    if any(len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for part in re.split(r"[/\\]", path)):
        raise ValueError(f"a path component is at most {MAX_NAME_BYTES} bytes")
    return value


def _one_line(value: str | None) -> str | None:
    """A name or id: no NUL and no control character."""
    if value is not None and _CONTROL.search(value):
        raise ValueError("holds no NUL or control character")
    return value


def _no_nul(value: str | None) -> str | None:
    """Free text: any character but NUL (git stores none, and no reader expects one)."""
    if value is not None and "\x00" in value:
        raise ValueError("holds no NUL character")
    return value


def _agents(value: str | list[str] | None) -> list[str] | None:
    """The names of a ``for`` argument, checked as ``tur learn --for`` checks them.

    A string is one name or a comma list (as one ``--for``), a list holds such strings;
    ``[]`` is everyone. Raises ``ValueError`` with the CLI's words for a bad name.
    """
    if value is None:
        return None
    from gitmem.api import agent_names
    from gitmem.errors import InvalidInput

    given = [value] if isinstance(value, str) else value
    if any(_CONTROL.search(name) for name in given):
        raise ValueError("holds no NUL or control character")
    try:
        return list(agent_names(given))
    except InvalidInput as exc:
        raise ValueError(f"{exc.message}; {exc.hint}" if exc.hint else exc.message) from None


def check_query(query: str) -> None:
    """Raise ``ValueError`` unless ``query`` is within :data:`MAX_QUERY_CHARS` and NUL-free."""
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"a query is at most {MAX_QUERY_CHARS} characters, got {len(query)}")
    _no_nul(query)


def check_id(memory_id: str) -> None:
    """Raise ``ValueError`` unless ``memory_id`` is within :data:`MAX_ID_CHARS` and one line."""
    if len(memory_id) > MAX_ID_CHARS:
        raise ValueError(f"an id is at most {MAX_ID_CHARS} characters, got {len(memory_id)}")
    _one_line(memory_id)


TypeArg = Annotated[str | None, Field(description="axiom | core | fact | insight | preference",
                                      json_schema_extra={"enum": [*(t.value for t in MemoryType), None]})]
StatusArg = Annotated[str | None, Field(description="only this stored status",
                                        json_schema_extra={"enum": [*(s.value for s in Status), None]})]
OptionalRelationArg = Annotated[str | None, Field(
    description=" | ".join(r.value for r in RelationType) + " (with `remove`: any, when none)",
    json_schema_extra={"enum": [*(r.value for r in RelationType), None]})]
IdArg = Annotated[str, Field(description="memory id or unique prefix (4+ hex digits)",
                             max_length=MAX_ID_CHARS),
                  AfterValidator(_one_line)]
FileArg = Annotated[str | None, Field(description="file, relative to the repository root",
                                      max_length=MAX_PATH_CHARS), AfterValidator(_path)]
AnchorArg = Annotated[str | None, Field(description="anchor `path` or `path#Lx-Ly`, from the repository root",
                                        max_length=MAX_PATH_CHARS), AfterValidator(_path)]
ContentArg = Annotated[str, Field(description="the statement", max_length=MAX_CONTENT_CHARS),
                       AfterValidator(_no_nul)]
QueryArg = Annotated[str, Field(description="what you are about to do, free text",
                                max_length=MAX_QUERY_CHARS), AfterValidator(_no_nul)]
ReasonArg = Annotated[str, Field(description="why it is wrong", max_length=MAX_REASON_CHARS),
                      AfterValidator(_no_nul)]
AgentArg = Annotated[str | None, Field(description="your name, recorded as the source",
                                       max_length=MAX_NAME_CHARS), AfterValidator(_one_line)]
_Name = Annotated[str, Field(max_length=MAX_NAME_CHARS)]
ForArg = Annotated[_Name | Annotated[list[_Name], Field(max_length=MAX_AGENTS)] | None, Field(
    description="for these agents only ([]: all)", validation_alias="for"),
    AfterValidator(_agents)]
"""``for``, as ``tur learn --for`` and ``tur edit --for``: the argument is named ``for`` (a
Python keyword: the parameter is ``for_agents``, the schema and the client say ``for``)."""
