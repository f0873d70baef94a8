// `facts mcp` as npm users get it: the npm package `factmem` and its platform package,
// installed from their tarballs, started with `npx facts mcp` and driven over stdio by the
// official TypeScript MCP SDK (`@modelcontextprotocol/sdk`, installed beside them). `.ci/npm`
// copies this script into the install directory (so `import` finds the SDK there) and runs:
//
//     node mcp_npm_client.mjs path/to/new.db VERSION
//
// It checks initialize (the server is `facts` VERSION), tools/list (the memory tools, each with
// an object input schema and an output schema), memory_add, memory_search (finds the fact just
// added), memory_recall (the fact in its text) and a tool error (memory_search without its
// required query is an error result with code `invalid_request`). Every result that is not an
// error is validated by the SDK against its tool's output schema (Ajv, as the SDK sets it up,
// with the number formats of the schemas). Exits non-zero, naming the failing check, when the
// server does not behave.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";

import Ajv from "ajv";
import addFormats from "ajv-formats";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";

const [db, version] = process.argv.slice(2);
assert.ok(db && version, "usage: node mcp_npm_client.mjs path/to/new.db VERSION");
assert.ok(!existsSync(db), `${db} exists; give a path for a new database`);

// The memory tools this check calls, and a few more that must be listed with them.
const MEMORY_TOOLS = [
  "memory_add",
  "memory_search",
  "memory_recall",
  "memory_history",
  "memory_get",
  "memory_list",
  "memory_delete",
  "memory_forget",
  "memory_erase_scope",
];

let passed = 0;
async function check(name, body) {
  await body();
  passed += 1;
  console.log(`ok ${passed} - ${name}`);
}

const transport = new StdioClientTransport({
  command: "npx",
  args: ["--offline", "facts", "mcp", "--db", db],
  cwd: process.cwd(),
  stderr: "inherit",
});
// The SDK's own validator (its Ajv options and ajv-formats), which also knows the number
// formats the tools' schemas carry (schemars names Rust's types: `uint64`, `double`, ...), so
// values are checked against them instead of the formats being ignored with a warning each.
const ajv = new Ajv({ strict: false, validateFormats: true, validateSchema: false, allErrors: true });
addFormats(ajv);
const unsigned = (n) => Number.isInteger(n) && n >= 0;
for (const [name, validate] of [
  ["uint", unsigned],
  ["uint8", (n) => unsigned(n) && n <= 0xff],
  ["uint16", (n) => unsigned(n) && n <= 0xffff],
  ["uint32", (n) => unsigned(n) && n <= 0xffffffff],
  ["uint64", unsigned],
  ["int", Number.isInteger],
  ["int32", (n) => Number.isInteger(n) && Math.abs(n) <= 2 ** 31],
  ["int64", Number.isInteger],
  ["float", Number.isFinite],
  ["double", Number.isFinite],
]) {
  ajv.addFormat(name, { type: "number", validate });
}
const client = new Client(
  { name: "factmem-npm-check", version: "1.0.0" },
  { jsonSchemaValidator: new AjvJsonSchemaValidator(ajv) },
);

try {
  await check("initialize: the server is facts " + version, async () => {
    await client.connect(transport);
    const server = client.getServerVersion();
    assert.equal(server?.name, "facts", JSON.stringify(server));
    assert.equal(server?.version, version, JSON.stringify(server));
    assert.ok(client.getServerCapabilities()?.tools, "the server offers no tools capability");
  });

  await check("tools/list: the memory tools, with input and output schemas", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    for (const name of MEMORY_TOOLS) {
      assert.ok(names.includes(name), `${name} is not listed: ${names.join(", ")}`);
    }
    for (const tool of tools) {
      assert.equal(tool.inputSchema.type, "object", tool.name);
      assert.equal(tool.outputSchema?.type, "object", tool.name);
    }
    const add = tools.find((tool) => tool.name === "memory_add");
    assert.deepEqual(add.inputSchema.required, ["subject", "relation", "object"]);
  });

  let id;
  await check("memory_add: a fact is added", async () => {
    const result = await client.callTool({
      name: "memory_add",
      arguments: {
        subject: "user",
        relation: "prefers_editor",
        object: "helix",
        statement: "User prefers the Helix editor",
        category: "preference",
      },
    });
    assert.ok(!result.isError, JSON.stringify(result));
    assert.equal(result.structuredContent.status, "added", JSON.stringify(result));
    id = result.structuredContent.id;
    assert.ok(typeof id === "string" && id.length > 0, JSON.stringify(result));
    assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
  });

  await check("memory_search: finds the fact just added", async () => {
    const result = await client.callTool({
      name: "memory_search",
      arguments: { query: "editor" },
    });
    assert.ok(!result.isError, JSON.stringify(result));
    const ids = result.structuredContent.results.map((found) => found.fact.id);
    assert.deepEqual(ids, [id], JSON.stringify(result));
  });

  await check("memory_recall: the fact is in the recalled text", async () => {
    const result = await client.callTool({
      name: "memory_recall",
      arguments: { query: "which editor does the user prefer?" },
    });
    assert.ok(!result.isError, JSON.stringify(result));
    const text = result.structuredContent.text;
    assert.ok(text.startsWith("## Relevant Facts\n"), text);
    assert.ok(text.includes("User prefers the Helix editor"), text);
  });

  await check("a tool error: memory_search without its query", async () => {
    const result = await client.callTool({ name: "memory_search", arguments: {} });
    assert.equal(result.isError, true, JSON.stringify(result));
    assert.equal(
      result.structuredContent?.error?.code,
      "invalid_request",
      JSON.stringify(result),
    );
    assert.ok(result.structuredContent.error.message.includes("query"), JSON.stringify(result));
  });
} finally {
  await client.close();
}
console.log(`npm MCP client: ${passed} passed, 0 failed`);
