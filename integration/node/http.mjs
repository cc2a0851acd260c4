// A TypeScript SDK client of `serve -http`: StreamableHTTPClientTransport
// with the bearer token in requestInit's headers.
//
//   node http.mjs < input.json > output.json
//
// input.json is {"url": "http://127.0.0.1:PORT/mcp", "token": "...",
// "calls": [run_python arguments, ...]}. The script first connects without
// the token (noToken is the error that gives), then connects with it, runs
// the calls in order in one MCP session, and ends the session with
// terminateSession() (DELETE). The output is {"noToken": "...",
// "sessionId": "...", "results": [{isError, text}], "sessionAfter": null}:
// sessionAfter is the transport's session id after terminateSession.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { readFileSync } from "node:fs";

const { url, token, calls } = JSON.parse(readFileSync(0, "utf8"));
const out = { noToken: "", sessionId: null, results: [], sessionAfter: null };

try {
  const anon = new Client({ name: "integration-ts-http-anonymous", version: "1.0.0" });
  await anon.connect(new StreamableHTTPClientTransport(new URL(url)));
  out.noToken = "connected without the token";
  await anon.close();
} catch (err) {
  out.noToken = `${err.code ?? ""} ${err.message}`;
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "integration-ts-http", version: "1.0.0" });
await client.connect(transport);
out.sessionId = transport.sessionId ?? null;
for (const args of calls) {
  const res = await client.callTool({ name: "run_python", arguments: args }, undefined, { timeout: 120000 });
  out.results.push({
    isError: !!res.isError,
    text: res.content.filter((c) => c.type === "text").map((c) => c.text).join(""),
  });
}
await transport.terminateSession();
out.sessionAfter = transport.sessionId ?? null;
await client.close();
process.stdout.write(JSON.stringify(out));
