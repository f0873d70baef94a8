"""`facts mcp` driven by the official MCP Python SDK's client (PyPI `mcp`), as a
client other than our own test would drive it. `.ci/run` runs it when Python and
PyPI are reachable:

    python mcp_client.py path/to/facts path/to/project

The project must hold `.spec-context/specs/demo/tasks.md` (the CLI test fixture).
Exits non-zero, with the failing check, when the server does not behave.
"""

import asyncio
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ACTIONS = [
    "init_run",
    "compile_prompt",
    "ingest_output",
    "get_snapshot",
    "query_facts",
    "fact_history",
    "get_telemetry",
]

RESULT = (
    "Done.\nBEGIN_DISPATCH_RESULT\n"
    '{"task_id": "1", "status": "completed", "summary": "Parser added in src/parser.rs",'
    ' "files_changed": ["src/parser.rs"]}\nEND_DISPATCH_RESULT\n'
)


async def main(binary: str, project: str) -> None:
    params = StdioServerParameters(command=binary, args=["mcp", "--project", project])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "facts", init

            tools = await session.list_tools()
            assert [t.name for t in tools.tools] == ACTIONS, tools
            for tool in tools.tools:
                assert tool.input_schema["type"] == "object", tool

            r = await session.call_tool("init_run", {"spec_name": "demo", "task_id": "1"})
            assert not r.is_error and r.structured_content["run_id"] == "demo:1", r
            r = await session.call_tool(
                "ingest_output",
                {"run_id": "demo:1", "role": "implementer", "task_id": "1", "output": RESULT},
            )
            assert r.structured_content["next_action"] == "dispatch_reviewer", r

            await session.call_tool("init_run", {"spec_name": "demo", "task_id": "2"})
            r = await session.call_tool(
                "compile_prompt", {"run_id": "demo:2", "role": "implementer", "task_id": "2"}
            )
            context = r.structured_content["session_context"]
            assert "src/parser.rs modified_by task:1" in context, context

            r = await session.call_tool("get_snapshot", {"run_id": "nope"})
            assert r.is_error, r
            assert r.structured_content["error"]["code"] == "run_not_initialized", r
    print("MCP interop: the official Python client passed every check")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
