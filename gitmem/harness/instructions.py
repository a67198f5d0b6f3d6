"""The agent-instructions block ``tur setup`` writes into a harness's instructions file."""

from __future__ import annotations

__all__ = ["instructions"]

_HOOKED = (
    "- At the start of a session you receive `tur wake`: identity, axioms and the most salient "
    "memories. Before each turn the memories relevant to the prompt are recalled{tool}. A memory "
    "is sent once per session unless it changes."
)

_MCP = (
    "- No hook sends memories to you here: use the `tur` MCP server's tools, or run `tur wake` "
    "at the start of a session and `tur recall \"what you are about to do\"` before a task "
    "(`tur recall --file PATH` before you edit PATH)."
)

_COMMON = (
    "- Memories are hypotheses, not facts. Each names its anchor (`path#Lx-Ly`) and, when it is "
    "not fresh, its status and why: open the anchored lines and check a memory before you rely "
    "on it. If the code disagrees, trust the code and run `tur refute ID --reason \"...\"`.\n"
    "- A memory that ends with `[compressed ...: tur show ID]` is a preview: run `tur show ID` "
    "to read all of it.\n"
    "- When you learn something durable about the code, record it, anchored to the lines it is "
    "about: `tur learn \"...\" --file path#Lx-Ly --agent {agent}`.\n"
    "- Before you stop, leave a note for the next session: `tur spark \"...\"`."
)


def instructions(agent: str, *, hooks: bool, tool_hook: bool, user: bool) -> str:
    """The block's markdown for one harness.

    Args:
        agent: the name the agent should pass to ``tur learn --agent``.
        hooks: whether the harness runs gitmem's hooks (else it is wired through MCP).
        tool_hook: whether a tool hook shows the memories anchored to a file before it is used.
        user: written for every repository of the user (``--scope user``), not one.
    """
    where = "repositories that use gitmem" if user else "this repository"
    head = (f"## Memory (gitmem)\n\nThe `tur` command keeps memories about the code of {where} "
            "on the git ref `refs/tur/memories`.\n\n")
    tool = (", and before you read or edit a file the memories anchored to it are shown"
            if tool_hook else "")
    first = _HOOKED.format(tool=tool) if hooks else _MCP
    return head + first + "\n" + _COMMON.format(agent=agent) + "\n"
