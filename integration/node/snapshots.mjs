// The TypeScript SDK v2 client with sandboxes that sleep and fork
// (MCP_BRIDGE_SNAPSHOTS=1), on protocol 2026-07-28 of `serve -http`.
//
//   MCP_TOKEN=... node snapshots.mjs URL setup
//   MCP_TOKEN=... node snapshots.mjs URL wake HANDLE
//
// setup runs run_python {code: "x = 41"} and prints {"handle"}; wake, once
// the handle's sandbox sleeps, runs print(x) in it, then forks it in two
// (fork: 2, after the code "y = 1") and runs `y += 1; print(y, x)` in each
// fork; it prints {"woken", "forks", "forkOutputs"}: the first call's
// text, the handles of structuredContent.forks, the forks' texts. Any
// failure exits 1.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, mode, handle] = process.argv.slice(2);
const token = process.env.MCP_TOKEN ?? "";

function fail(msg) {
  process.stderr.write(`snapshots.mjs: ${msg}\n`);
  process.exit(1);
}

if (!url || !["setup", "wake"].includes(mode) || (mode === "wake" && !handle)) fail("usage: node snapshots.mjs URL setup|wake HANDLE");

const textOf = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("");

async function run(client, args) {
  const res = await client.callTool({ name: "run_python", arguments: args }, { timeout: 120000 });
  if (res.isError) fail(`run_python ${JSON.stringify(args)}: ${textOf(res)}`);
  return res;
}

try {
  const client = new Client({ name: "integration-ts2-snapshots", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  if (client.getNegotiatedProtocolVersion() !== "2026-07-28") fail(`negotiated ${client.getNegotiatedProtocolVersion()}`);
  if (mode === "setup") {
    const res = await run(client, { code: "x = 41\nprint('set')", timeout: 60 });
    if (!res.structuredContent?.session) fail("no handle");
    process.stdout.write(JSON.stringify({ handle: res.structuredContent.session }) + "\n");
  } else {
    const woken = textOf(await run(client, { code: "print('x is', x)", session: handle, timeout: 60 }));
    const forked = await run(client, { code: "y = 1", session: handle, fork: 2, timeout: 60 });
    const forks = forked.structuredContent?.forks ?? [];
    if (forks.length !== 2) fail(`fork: 2 gave ${JSON.stringify(forked.structuredContent)}`);
    const forkOutputs = [];
    for (const f of forks) forkOutputs.push(textOf(await run(client, { code: "y += 1\nprint(y, x)", session: f, timeout: 60 })));
    process.stdout.write(JSON.stringify({ woken, forks, forkOutputs }) + "\n");
  }
  await client.close();
} catch (e) {
  fail(e?.stack ?? String(e));
}
