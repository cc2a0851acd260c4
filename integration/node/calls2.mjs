// The TypeScript SDK v2 client (@modelcontextprotocol/client) on protocol
// 2026-07-28 making run_python calls through several replicas of
// `serve -http`, a handle carried between them.
//
//   MCP_TOKEN=... node calls2.mjs < calls.json > results.json
//
// calls.json is a list of {"url", "arguments", "handle"?, "save"?}: each
// call goes to its url (one client per url), its arguments' "session" set
// to the handle saved under the name "handle" (when given); "save" names
// the handle the result mints. The output is one JSON line, a list of
// {"text", "isError", "session"} in the order of the calls. A call that
// throws, or a client that does not negotiate 2026-07-28, exits 1.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const token = process.env.MCP_TOKEN ?? "";

function fail(msg) {
  process.stderr.write(`calls2.mjs: ${msg}\n`);
  process.exit(1);
}

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

const clients = new Map();

async function clientFor(url) {
  if (clients.has(url)) return clients.get(url);
  const client = new Client({ name: "integration-ts2-calls", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  const version = client.getNegotiatedProtocolVersion();
  if (version !== "2026-07-28") fail(`negotiated protocol ${version} with ${url}, want 2026-07-28`);
  clients.set(url, client);
  return client;
}

try {
  const calls = await readStdin();
  const handles = {};
  const out = [];
  for (const c of calls) {
    const client = await clientFor(c.url);
    const args = { ...c.arguments };
    if (c.handle) {
      if (!handles[c.handle]) fail(`no handle saved as ${c.handle}`);
      args.session = handles[c.handle];
    }
    const res = await client.callTool({ name: "run_python", arguments: args }, { timeout: 180000 });
    const text = res.content.filter((x) => x.type === "text").map((x) => x.text).join("");
    const session = res.structuredContent?.session ?? null;
    if (c.save) handles[c.save] = session;
    out.push({ text, isError: !!res.isError, session });
  }
  for (const client of clients.values()) await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
} catch (err) {
  fail(err?.stack ?? String(err));
}
