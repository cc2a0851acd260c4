// A real MCP client for `setup`'s integration test: the official TypeScript
// SDK starts exactly the server entry a client's configuration file holds
// (its command, args and env) and calls run_python.
//
//   node configured.mjs CONFIG_FILE NAME < calls.json > results.json
//
// CONFIG_FILE is a client's JSON configuration (mcpServers, or VS Code's
// servers); calls.json is a JSON array of run_python argument objects; the
// output is {"entry": {...}, "tools": [...], "results": [{text, isError}, ...]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync } from "node:fs";

const [configFile, name] = process.argv.slice(2);
const config = JSON.parse(readFileSync(configFile, "utf8"));
const entry = (config.mcpServers ?? config.servers ?? {})[name];
if (!entry) {
  console.error(`${configFile} has no server ${name}`);
  process.exit(2);
}
const calls = JSON.parse(readFileSync(0, "utf8"));
const transport = new StdioClientTransport({
  command: entry.command,
  args: entry.args ?? [],
  env: { ...process.env, ...(entry.env ?? {}) },
  stderr: "inherit",
});
const client = new Client({ name: "integration-setup-client", version: "1.0.0" });
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name);
const results = [];
for (const args of calls) {
  const res = await client.callTool({ name: "run_python", arguments: args }, undefined, { timeout: 300000 });
  results.push({ text: res.content.map((c) => c.text ?? "").join(""), isError: !!res.isError });
}
await client.close();
process.stdout.write(JSON.stringify({ entry, tools, results }));
