"""The user's prompt in a harness hook payload: what the pre-turn hook recalls for."""

from __future__ import annotations

import json

__all__ = ["MAX_QUERY_CHARS", "query_from_payload"]

MAX_QUERY_CHARS = 4000
"""A longer query (e.g. a pasted log in a prompt) is cut to this many characters."""


def query_from_payload(payload: bytes | str) -> str:
    """The user's prompt in a harness hook payload, or ``""``; never raises.

    Accepts a JSON object with one of ``prompt``, ``user_prompt``, ``query``, ``message``,
    ``input``, ``text`` (a string), or ``messages`` (a list whose last ``user`` message's
    ``content`` is a string or a list of ``{"type": "text", "text": ...}`` parts); a JSON
    string; or, when the payload is not JSON, the payload itself as text. Bytes are decoded as
    UTF-8 with replacement. The query is cut to :data:`MAX_QUERY_CHARS`.
    """
    try:
        text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(payload)
        try:
            data = json.loads(text)
        except ValueError:
            return text.strip()[:MAX_QUERY_CHARS]
        return _prompt_of(data).strip()[:MAX_QUERY_CHARS]
    except Exception:  # a hook must never break the harness's turn
        return ""


def _prompt_of(data: object) -> str:
    if isinstance(data, str):
        return data
    if not isinstance(data, dict):
        return ""
    for key in ("prompt", "user_prompt", "query", "message", "input", "text"):
        if isinstance(data.get(key), str):
            return data[key]
    messages = data.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role", "user") == "user":
                return _content_text(message.get("content"))
    return ""


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""
