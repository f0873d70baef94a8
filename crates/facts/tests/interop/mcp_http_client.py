"""`facts mcp --http` driven by the official MCP Python SDK's streamable HTTP client
(`mcp.client.streamable_http`). `.ci/run` runs it after `mcp_client.py`:

    python mcp_http_client.py path/to/facts path/to/project path/to/new.db

It starts `facts mcp --http 127.0.0.1:0` (with `--db`, so the memory tools are served),
reads the URL the server prints on stderr, and opens two client sessions at once: what the
first one ingests and remembers, the second one's prompt, queries and memory search see,
since all sessions share the server's one runtime. Every result must fit its tool's output
schema (the checks of `mcp_client.py`). Then it starts a second server with `--tokens` and
two tenants, and connects each with its bearer token (an `httpx2.AsyncClient` with the
`Authorization` header): one tenant's memory is not the other's, a read-only tenant sees only
the read-only tools and gets `forbidden` for the others, and a request without a token gets
401. Exits non-zero, with the failing check, when the server does not behave.
"""

import asyncio
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading

import httpx2

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from mcp_client import ACTIONS, MEMORY_TOOLS, RESULT, Checked, check_tools, check_unknown_tool

# How long the server may take to print its URL.
START_TIMEOUT_SECONDS = 30


def start(
    binary: str, project: str, db: str, extra: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[str], str]:
    """The server process and the URL it printed on stderr."""
    server = subprocess.Popen(
        [binary, "mcp", "--http", "127.0.0.1:0", "--project", project, "--db", db, *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stderr is not None
    found: list[str] = []
    seen: list[str] = []

    def read() -> None:
        assert server.stderr is not None
        for line in server.stderr:  # read to the end, so the server never blocks on stderr
            seen.append(line)
            match = re.search(r"http://\S+", line)
            if match and not found:
                found.append(match.group(0))

    threading.Thread(target=read, daemon=True).start()
    for _ in range(START_TIMEOUT_SECONDS * 10):
        if found or server.poll() is not None:
            break
        threading.Event().wait(0.1)
    if not found:
        server.kill()
        raise AssertionError(f"no URL on stderr: {''.join(seen)!r}")
    url = found[0]
    assert re.fullmatch(r"http://127\.0\.0\.1:[1-9][0-9]*/mcp", url), url
    return server, url


async def two_clients(url: str) -> None:
    async with (
        streamable_http_client(url) as (read_a, write_a),
        ClientSession(read_a, write_a) as first,
        streamable_http_client(url) as (read_b, write_b),
        ClientSession(read_b, write_b) as second,
    ):
        init = await first.initialize()
        assert init.server_info.name == "facts", init
        await second.initialize()
        tools = await first.list_tools()
        check_tools(tools, ACTIONS + MEMORY_TOOLS)
        a = Checked(first, tools)
        b = Checked(second, await second.list_tools())

        # The first client runs task 1 and remembers a preference...
        r = await a.call("init_run", {"spec_name": "demo", "task_id": "1"})
        assert not r.is_error, r
        r = await a.call(
            "ingest_output",
            {"run_id": "demo:1", "role": "implementer", "task_id": "1", "output": RESULT},
        )
        assert r.structured_content["next_action"] == "dispatch_reviewer", r
        r = await a.call(
            "memory_add",
            {"subject": "user", "relation": "prefers_test_framework", "object": "pytest",
             "statement": "User prefers pytest over unittest", "category": "preference"},
        )
        assert not r.is_error and r.structured_content["status"] == "added", r

        # ...and the second one, in its own session, sees both.
        r = await b.call("init_run", {"spec_name": "demo", "task_id": "2"})
        assert not r.is_error, r
        r = await b.call(
            "compile_prompt", {"run_id": "demo:2", "role": "implementer", "task_id": "2"}
        )
        context = r.structured_content["session_context"]
        assert "src/parser.rs modified_by task:1" in context, context
        r = await b.call(
            "query_facts",
            {"spec_name": "demo", "task_id": "2", "task_description": "extend the parser"},
        )
        assert "src/parser.rs" in [f["subject"] for f in r.structured_content["facts"]], r
        r = await b.call("memory_search", {"query": "test framework"})
        assert [x["fact"]["object"] for x in r.structured_content["results"]] == ["pytest"], r
        r = await b.call("get_telemetry", {})
        assert r.structured_content["telemetry"]["dispatch_count"] == 1, r

        r = await b.call("fact_history", {"spec_name": "demo"})
        assert r.is_error and r.structured_content["error"]["code"] == "invalid_request", r
        await check_unknown_tool(second)


# The tenants' bearer tokens: `alice` may do everything, `bob` only read.
ALICE = "alice-token-0123456789"
BOB = "bob-token-9876543210"


def token_file(directory: str) -> str:
    """A token file of the two tenants, listing their tokens' SHA-256."""
    def digest(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    path = os.path.join(directory, "tokens.json")
    tenants = [
        {"tenant": "alice", "sha256": digest(ALICE), "rights": ["read", "write", "runtime"]},
        {"tenant": "bob", "sha256": digest(BOB), "rights": ["read"]},
    ]
    with open(path, "w", encoding="utf-8") as file:
        json.dump({"tenants": tenants}, file)
    return path


async def tenants(url: str) -> None:
    """Two tenants on one server, each with its token: apart, and each within its rights."""
    async with httpx2.AsyncClient() as anonymous:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "anonymous", "version": "0"}}}
        r = await anonymous.post(
            url, json=init, headers={"Accept": "application/json, text/event-stream"}
        )
        assert r.status_code == 401, r
        assert r.headers["www-authenticate"].startswith("Bearer"), r.headers
        assert r.json()["error"]["message"].startswith("Unauthorized"), r.text
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {ALICE}"}) as http_a,
        streamable_http_client(url, http_client=http_a) as (read_a, write_a),
        ClientSession(read_a, write_a) as alice,
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {BOB}"}) as http_b,
        streamable_http_client(url, http_client=http_b) as (read_b, write_b),
        ClientSession(read_b, write_b) as bob,
    ):
        await alice.initialize()
        await bob.initialize()
        tools = await alice.list_tools()
        check_tools(tools, ACTIONS + MEMORY_TOOLS)
        bob_tools = await bob.list_tools()
        names = [t.name for t in bob_tools.tools]
        assert "memory_search" in names and "memory_add" not in names, names
        assert all(t.annotations.read_only_hint for t in bob_tools.tools), names
        a = Checked(alice, tools)
        b = Checked(bob, bob_tools)
        r = await a.call(
            "memory_add",
            {"subject": "alice", "relation": "prefers_test_framework", "object": "pytest",
             "statement": "Alice prefers pytest"},
        )
        assert not r.is_error and r.structured_content["status"] == "added", r
        r = await a.call("memory_search", {"query": "pytest"})
        assert len(r.structured_content["results"]) == 1, r
        r = await b.call("memory_search", {"query": "pytest"})
        assert not r.is_error and r.structured_content["results"] == [], r
        r = await bob.call_tool("memory_add", {"subject": "a", "relation": "b", "object": "c"})
        assert r.is_error and r.structured_content["error"]["code"] == "forbidden", r


def main(binary: str, project: str, db: str) -> None:
    assert not os.path.exists(db), f"{db} exists; give a path for a new database"
    server, url = start(binary, project, db)
    try:
        asyncio.run(two_clients(url))
    finally:
        server.terminate()
        server.wait(timeout=10)
    with tempfile.TemporaryDirectory() as directory:
        tenant_db = os.path.join(directory, "tenants.db")
        server, url = start(binary, project, tenant_db, ("--tokens", token_file(directory)))
        try:
            asyncio.run(tenants(url))
        finally:
            server.terminate()
            server.wait(timeout=10)
    print("MCP interop over streamable HTTP: the official Python client passed every check")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
