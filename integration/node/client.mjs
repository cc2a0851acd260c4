// A real MCP client for the integration tests: the official TypeScript SDK
// drives the bridge binary over stdio.
//
//   node client.mjs BRIDGE_BINARY < calls.json > results.json
//
// calls.json is a JSON array of run_python argument objects; the output is
// {"tools": [...], "resources": [...], "manual": "...", "badResource": "...",
//  "results": [{text, isError, structuredContent}, ...]}: manual is the text of
// the first resource as resources/read returns it, badResource the error
// message of reading a URI the bridge does not serve.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync } from "node:fs";

const [bridge] = process.argv.slice(2);
const calls = JSON.parse(readFileSync(0, "utf8"));
const transport = new StdioClientTransport({ command: bridge, args: ["run"], env: process.env, stderr: "inherit" });
const client = new Client({ name: "integration-ts-client", version: "1.0.0" });
await client.connect(transport);
const tools = (await client.listTools()).tools;
const resources = (await client.listResources()).resources;
const manual = resources.length ? (await client.readResource({ uri: resources[0].uri })).contents.map((c) => c.text ?? "").join("") : "";
let badResource = "";
try {
  await client.readResource({ uri: "resource://mcp-server-code-execution-mode/nothing-here" });
} catch (err) {
  badResource = `${err.code ?? ""} ${err.message} ${JSON.stringify(err.data ?? null)}`;
}
const results = [];
for (const args of calls) {
  const res = await client.callTool({ name: "run_python", arguments: args }, undefined, { timeout: 300000 });
  results.push({ text: res.content.map((c) => c.text ?? "").join(""), isError: !!res.isError, structuredContent: res.structuredContent ?? null });
}
await client.close();
process.stdout.write(JSON.stringify({ tools, resources, manual, badResource, results }));
