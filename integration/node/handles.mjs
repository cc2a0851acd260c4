// A TypeScript SDK client keeping a sandbox's state across calls of
// `serve -http`, in either protocol era.
//
//   MCP_TOKEN=... node handles.mjs v2|v1 URL N
//
// v2 is the SDK v2 client (@modelcontextprotocol/client) on protocol
// 2026-07-28, with no MCP session: the first call, run_python
// {code: "x = 41"}, mints a sandbox handle (structuredContent.session, and
// the first line of its text), and N more calls pass it as "session", each
// running `x += 1; print(x)`. v1 is the SDK 1.x client
// (@modelcontextprotocol/sdk) on a 2025-11-25 MCP session: the same calls
// without a handle, the session keeping the state. The output is one JSON
// line {"sdk", "protocolVersion", "sessionId", "handle", "handlePrefix",
// "handleLine", "first", "outputs"}: handle is null when none came,
// handlePrefix its first 4 characters, handleLine whether the first call's
// text began with the line naming it, first the rest of that text, outputs
// the texts of the N calls. Any failure (a tool error, a call that throws,
// another protocol) exits 1.
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [sdk, url, n] = process.argv.slice(2);
const token = process.env.MCP_TOKEN ?? "";
const calls = Number(n);
const wantVersion = { v2: "2026-07-28", v1: "2025-11-25" }[sdk];

function fail(msg) {
  process.stderr.write(`handles.mjs ${sdk}: ${msg}\n`);
  process.exit(1);
}

if (!wantVersion || !url || !(calls >= 0)) fail("usage: node handles.mjs v2|v1 URL N");

function textOf(res) {
  return res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
}

async function connect() {
  const headers = { Authorization: `Bearer ${token}` };
  if (sdk === "v2") {
    // The SDK v2 client speaks 2025-11-25 unless told: "auto" probes with
    // server/discover and takes 2026-07-28 when the server offers it.
    const client = new Client2({ name: "integration-ts2-handles", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
    const transport = new Transport2(new URL(url), { requestInit: { headers } });
    await client.connect(transport);
    return { client, version: client.getNegotiatedProtocolVersion(), sessionId: transport.sessionId ?? null };
  }
  const client = new Client({ name: "integration-ts1-handles", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
  return { client, version: transport.protocolVersion, sessionId: transport.sessionId ?? null };
}

async function run(client, args) {
  const params = { name: "run_python", arguments: args };
  // 1.x takes a result schema before the options; v2 the options alone.
  const res = await (sdk === "v1" ? client.callTool(params, undefined, { timeout: 120000 }) : client.callTool(params, { timeout: 120000 }));
  const text = textOf(res);
  if (res.isError) fail(`run_python ${JSON.stringify(args)}: ${text}`);
  return { text, session: res.structuredContent?.session ?? null };
}

try {
  const { client, version, sessionId } = await connect();
  if (version !== wantVersion) fail(`negotiated protocol ${version}, want ${wantVersion}`);
  const first = await run(client, { code: "x = 41\nprint('set')", timeout: 60 });
  const h = first.session;
  if (sdk === "v2" && !h) fail(`the first call carries no handle: ${JSON.stringify(first)}`);
  const [line, ...rest] = first.text.split("\n");
  const handleLine = !!h && line.startsWith(`session: ${h} `);
  const out = {
    sdk,
    protocolVersion: version,
    sessionId,
    handle: h,
    handlePrefix: h ? h.slice(0, 4) : null,
    handleLine,
    first: handleLine ? rest.join("\n") : first.text,
    outputs: [],
  };
  for (let i = 0; i < calls; i++) {
    const args = { code: "x += 1\nprint(x)", timeout: 60 };
    if (h) args.session = h;
    const res = await run(client, args);
    if (res.session) fail(`call ${i + 1} minted another handle`);
    out.outputs.push(res.text);
  }
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
} catch (err) {
  fail(err?.stack ?? String(err));
}
