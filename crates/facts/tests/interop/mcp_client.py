"""`facts mcp` driven by the official MCP Python SDK's client (PyPI `mcp`), as a
client other than our own test would drive it. `.ci/run` runs it when Python and
PyPI are reachable:

    python mcp_client.py path/to/facts path/to/project path/to/new.db

The project must hold `.spec-context/specs/demo/tasks.md` (the CLI test fixture); the
database must not exist yet (`facts mcp --db` creates it). Three sessions: one without a
database (the protocol's tools only), one with it (the memory tools too: add, search,
recall, history, delete, archive, then get, list with as_of, the user context, aliases and
forget; and a run of task 1), and one more on the same database after the second has
exited, which must still serve the remembered fact and task 1's facts.
Every tool must carry an output schema and annotations, and every result, a tool error's
too, must fit its tool's output schema (the SDK itself checks only the results that are not
errors). `mcp_http_client.py` reuses these checks over streamable HTTP.
Exits non-zero, with the failing check, when the server does not behave.
"""

import asyncio
import json
import os
import sys
from typing import Any

from jsonschema.validators import validator_for
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ACTIONS = [
    "init_run",
    "compile_prompt",
    "ingest_output",
    "set_task_status",
    "end_run",
    "get_snapshot",
    "query_facts",
    "fact_history",
    "get_telemetry",
]

READ_ONLY = [
    "get_snapshot",
    "query_facts",
    "fact_history",
    "get_telemetry",
    "memory_get",
    "memory_list",
    "memory_search",
    "memory_search_many",
    "memory_recall",
    "memory_history",
    "memory_neighbours",
    "memory_format",
    "memory_context",
    "memory_aliases",
    "memory_export",
]

# The memory tools that delete what cannot be recovered: a client asks before calling them.
DESTRUCTIVE_MEMORY = ["memory_delete", "memory_forget", "memory_erase_scope"]

# The memory tools that may run a model command.
OPEN_WORLD = ["memory_archive", "memory_backfill"]

RESULT = (
    "Done.\nBEGIN_DISPATCH_RESULT\n"
    '{"task_id": "1", "status": "completed", "summary": "Parser added in src/parser.rs",'
    ' "files_changed": ["src/parser.rs"]}\nEND_DISPATCH_RESULT\n'
)


MEMORY_TOOLS = [
    "memory_add",
    "memory_add_many",
    "memory_get",
    "memory_list",
    "memory_update",
    "memory_delete",
    "memory_search",
    "memory_search_many",
    "memory_recall",
    "memory_history",
    "memory_neighbours",
    "memory_format",
    "memory_archive",
    "memory_backfill",
    "memory_context",
    "memory_set_context",
    "memory_aliases",
    "memory_alias",
    "memory_unalias",
    "memory_forget",
    "memory_erase_scope",
    "memory_export",
]

TRANSCRIPT = json.dumps({"role": "user", "content": "I moved to Lisbon last month."})


class Checked:
    """A session whose every tool result is checked against the tool's output schema."""

    def __init__(self, session: ClientSession, tools: Any) -> None:
        self.session = session
        self.schemas = {t.name: t.output_schema for t in tools.tools}

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        r = await self.session.call_tool(name, arguments)
        schema = self.schemas.get(name)
        if schema is not None:
            errors = list(validator_for(schema)(schema).iter_errors(r.structured_content))
            assert not errors, (name, arguments, r.structured_content, errors)
        assert json.loads(r.content[0].text) == r.structured_content, r
        return r


def check_tools(tools: Any, names: list[str]) -> None:
    """The tools are `names`, each with an object input schema, an output schema, a title
    and annotations; the read-only ones say so, and so do the memory tools that delete for
    good and those that may run a model command."""
    assert [t.name for t in tools.tools] == names, tools
    for tool in tools.tools:
        assert tool.input_schema["type"] == "object", tool
        assert tool.output_schema["type"] == "object", tool
        assert tool.output_schema["required"] == ["ok"], tool
        assert tool.title and tool.annotations.title == tool.title, tool
        a = tool.annotations
        assert a.read_only_hint == (tool.name in READ_ONLY), tool
        assert a.destructive_hint is not None and a.idempotent_hint is not None, tool
        assert a.open_world_hint == (tool.name in OPEN_WORLD), tool
        if tool.name.startswith("memory_"):
            assert a.destructive_hint == (tool.name in DESTRUCTIVE_MEMORY), tool


async def check_unknown_tool(session: ClientSession) -> None:
    """A tool that does not exist is a tool error naming the tools there are."""
    r = await session.call_tool("fly", {})
    assert r.is_error, r
    error = r.structured_content["error"]
    assert error["code"] == "unknown_tool" and "known tools: init_run" in error["message"], r


def server(binary: str, project: str, db: str | None = None) -> StdioServerParameters:
    args = ["mcp", "--project", project]
    if db is not None:
        args += ["--db", db]
    return StdioServerParameters(command=binary, args=args)


async def without_database(binary: str, project: str) -> None:
    params = server(binary, project)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "facts", init

            tools = await session.list_tools()
            check_tools(tools, ACTIONS)
            checked = Checked(session, tools)

            r = await checked.call("init_run", {"spec_name": "demo", "task_id": "1"})
            assert not r.is_error and r.structured_content["run_id"] == "demo:1", r
            r = await checked.call(
                "ingest_output",
                {"run_id": "demo:1", "role": "implementer", "task_id": "1", "output": RESULT},
            )
            assert r.structured_content["next_action"] == "dispatch_reviewer", r

            await checked.call("init_run", {"spec_name": "demo", "task_id": "2"})
            r = await checked.call(
                "compile_prompt", {"run_id": "demo:2", "role": "implementer", "task_id": "2"}
            )
            context = r.structured_content["session_context"]
            assert "src/parser.rs modified_by task:1" in context, context

            r = await checked.call("get_snapshot", {"run_id": "nope"})
            assert r.is_error, r
            assert r.structured_content["error"]["code"] == "run_not_initialized", r
            r = await checked.call(
                "ingest_output",
                {"run_id": "demo:2", "role": "implementer", "task_id": "2", "output": "none"},
            )
            assert r.is_error and r.structured_content["error"]["code"] == "marker_missing", r
            for name in ["get_snapshot", "query_facts", "fact_history", "get_telemetry"]:
                r = await checked.call(name, {"no_such_field": 1})
                assert r.is_error, r
                assert r.structured_content["error"]["code"] == "invalid_request", r
            r = await checked.call("end_run", {"run_id": "demo:2"})
            assert not r.is_error and r.structured_content["spec_name"] == "demo", r
            r = await checked.call("end_run", {"run_id": "demo:2"})
            assert r.is_error, r
            assert r.structured_content["error"]["code"] == "run_not_initialized", r
            await check_unknown_tool(session)


async def with_database(binary: str, project: str, db: str) -> None:
    """The memory tools round trip, and task 1 of a run goes into the database."""
    async with stdio_client(server(binary, project, db)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            check_tools(tools, ACTIONS + MEMORY_TOOLS)
            checked = Checked(session, tools)
            add = next(t for t in tools.tools if t.name == "memory_add")
            assert add.input_schema["required"] == ["subject", "relation", "object"], add

            fact = {"subject": "user", "relation": "prefers_test_framework",
                    "category": "preference", "confidence": 0.9}
            r = await checked.call(
                "memory_add", {**fact, "object": "unittest", "statement": "User prefers unittest"}
            )
            assert not r.is_error and r.structured_content["status"] == "added", r
            old_id = r.structured_content["id"]
            r = await checked.call(
                "memory_add",
                {**fact, "object": "pytest", "statement": "User prefers pytest over unittest"},
            )
            assert r.structured_content["superseded"] == [old_id], r
            new_id = r.structured_content["id"]

            r = await checked.call("memory_search", {"query": "test framework"})
            results = r.structured_content["results"]
            assert [x["fact"]["id"] for x in results] == [new_id], r
            assert json.loads(r.content[0].text) == r.structured_content, r

            r = await checked.call(
                "memory_recall", {"query": "which test framework does the user prefer?"}
            )
            text = r.structured_content["text"]
            assert text.startswith("## Relevant Facts\n- [preference] User prefers pytest"), text

            r = await checked.call("memory_history", {"subject": "user"})
            versions = r.structured_content["versions"]
            assert [v["id"] for v in versions] == [old_id, new_id], r
            assert versions[0]["superseded_by"] == new_id, r

            r = await checked.call(
                "memory_add", {"subject": "user", "relation": "lives_in", "object": "Porto"}
            )
            porto = r.structured_content["id"]
            r = await checked.call("memory_delete", {"id": porto})
            assert not r.is_error and r.structured_content["versions"] == 1, r
            r = await checked.call("memory_delete", {"id": porto})
            assert r.is_error and r.structured_content["error"]["code"] == "not_found", r

            r = await checked.call(
                "memory_archive", {"transcript": TRANSCRIPT, "title": "Moving house"}
            )
            assert not r.is_error and r.structured_content["changes"] is None, r
            episode = r.structured_content["episode_id"]
            # A command a client names runs only on a server started with --allow-llm-cmd.
            for name, arguments in [
                ("memory_archive", {"transcript": TRANSCRIPT, "llm_cmd": "cat"}),
                ("memory_backfill", {"llm_cmd": "cat"}),
            ]:
                r = await checked.call(name, arguments)
                assert r.is_error, r
                assert r.structured_content["error"]["code"] == "llm_cmd_not_allowed", r

            await memory_maintenance(checked, new_id)

            r = await checked.call("memory_forget", {"episode": episode, "subject": "user"})
            assert r.is_error, r
            assert r.structured_content["error"]["code"] == "invalid_request", r

            r = await checked.call("init_run", {"spec_name": "demo", "task_id": "1"})
            assert not r.is_error, r
            r = await checked.call(
                "ingest_output",
                {"run_id": "demo:1", "role": "implementer", "task_id": "1", "output": RESULT},
            )
            assert r.structured_content["next_action"] == "dispatch_reviewer", r


async def memory_maintenance(checked: Checked, current_id: str) -> None:
    """get, list (now and as_of), the user context, aliases and forget, each answer within
    its tool's output schema; `current_id` is the current test framework preference."""
    r = await checked.call("memory_get", {"id": current_id})
    assert not r.is_error and r.structured_content["fact"]["object"] == "pytest", r
    r = await checked.call("memory_get", {"id": "not-an-id"})
    assert r.is_error and r.structured_content["error"]["code"] == "invalid_id", r

    # Lisbon since March 1; Berlin only from the first of July.
    r = await checked.call(
        "memory_add",
        {"subject": "user", "relation": "lives_in", "object": "Lisbon",
         "statement": "User lives in Lisbon", "valid_from": "2026-03-01T09:00:00Z"},
    )
    lisbon = r.structured_content["id"]
    r = await checked.call(
        "memory_add",
        {"subject": "user", "relation": "lives_in", "object": "Berlin",
         "statement": "User lives in Berlin", "valid_from": "2026-07-01T09:00:00Z"},
    )
    assert r.structured_content["superseded"] == [lisbon], r
    r = await checked.call("memory_list", {})
    objects = [f["object"] for f in r.structured_content["facts"]]
    assert "Berlin" in objects and "Lisbon" not in objects, r
    assert r.structured_content["count"] == len(objects), r
    r = await checked.call("memory_list", {"as_of": "2026-04-01T00:00:00Z"})
    assert [f["object"] for f in r.structured_content["facts"]] == ["Lisbon"], r
    r = await checked.call("memory_list", {"as_of": "April"})
    assert r.is_error and r.structured_content["error"]["code"] == "invalid_request", r

    r = await checked.call("memory_context", {})
    assert r.structured_content["versions"] == [], r
    r = await checked.call(
        "memory_set_context",
        {"work": "Staff engineer at Acme", "top_of_mind": "The parser rewrite"},
    )
    assert r.structured_content["changed"] == ["work", "top_of_mind"], r
    r = await checked.call("memory_context", {})
    assert r.structured_content["user_context"]["work"] == "Staff engineer at Acme", r
    assert [v["field"] for v in r.structured_content["versions"]] == ["work", "top_of_mind"], r
    r = await checked.call("memory_set_context", {})
    assert r.is_error and r.structured_content["error"]["code"] == "invalid_request", r
    r = await checked.call("memory_format", {})
    assert r.structured_content["text"].startswith("User Context:\n- Work: Staff engineer"), r

    r = await checked.call(
        "memory_add",
        {"subject": "Mel", "relation": "adopted_pet", "object": "Oscar",
         "statement": "Mel adopted a puppy named Oscar"},
    )
    r = await checked.call("memory_alias", {"alias": "Mel", "entity": "Melanie"})
    assert (r.structured_content["alias"], r.structured_content["entity"]) == (
        "mel", "melanie"), r
    assert len(r.structured_content["merged"]) == 1, r
    r = await checked.call("memory_aliases", {})
    assert [(a["alias"], a["entity"]) for a in r.structured_content["aliases"]] == [
        ("mel", "melanie")], r
    r = await checked.call("memory_alias", {"alias": "Melanie", "entity": "Mel"})
    assert r.is_error and r.structured_content["error"]["code"] == "alias_cycle", r
    r = await checked.call("memory_search", {"query": "Mel"})
    assert [x["fact"]["subject"] for x in r.structured_content["results"]] == ["melanie"], r

    r = await checked.call("memory_forget", {"subject": "Melanie"})
    assert not r.is_error, r
    assert r.structured_content["aliases"] == ["mel"], r
    assert r.structured_content["versions"] == 2, r
    r = await checked.call("memory_search", {"query": "Oscar"})
    assert r.structured_content["results"] == [], r
    r = await checked.call("memory_aliases", {})
    assert r.structured_content["aliases"] == [], r
    r = await checked.call("memory_forget", {"subject": "Melanie"})
    assert r.is_error and r.structured_content["error"]["code"] == "not_found", r
    # Erasing names the scope the server holds; another name erases nothing.
    r = await checked.call("memory_erase_scope", {"scope": "user:someone-else"})
    assert r.is_error and r.structured_content["error"]["code"] == "wrong_scope", r
    # The export comes in pages whose lines join into the file.
    lines, offset = "", 0
    while offset is not None:
        r = await checked.call("memory_export", {"offset": offset, "limit": 2})
        assert not r.is_error, r
        lines += r.structured_content["lines"]
        offset = r.structured_content["next_offset"]
    records = [json.loads(line) for line in lines.splitlines()]
    assert records[0]["type"] == "header" and records[-1]["type"] == "end", records
    assert records[-1]["records"] == len(records) - 2, records


async def after_restart(binary: str, project: str, db: str) -> None:
    """A new server on the same database serves what the last one stored."""
    async with stdio_client(server(binary, project, db)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            r = await session.call_tool("memory_search", {"query": "pytest"})
            results = r.structured_content["results"]
            assert results and results[0]["fact"]["object"] == "pytest", r

            r = await session.call_tool(
                "memory_recall", {"query": "moving house"}
            )
            assert r.structured_content["episodes"][0]["title"] == "Moving house", r

            r = await session.call_tool(
                "query_facts",
                {"spec_name": "demo", "task_id": "2", "task_description": "extend the parser"},
            )
            assert not r.is_error, r
            subjects = [f["subject"] for f in r.structured_content["facts"]]
            assert "src/parser.rs" in subjects, r


async def main(binary: str, project: str, db: str) -> None:
    assert not os.path.exists(db), f"{db} exists; give a path for a new database"
    await without_database(binary, project)
    await with_database(binary, project, db)
    await after_restart(binary, project, db)
    print("MCP interop: the official Python client passed every check")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
