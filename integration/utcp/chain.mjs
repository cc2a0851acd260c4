// Node: needs Node >= 22. @utcp/code-mode 1.2.12 runs code in isolated-vm 6.x, whose
// engines field is node >= 22 and which ships prebuilt binaries only for Node 22
// (ABI 127) and Node 24 (ABI 137). package.json pins the npm package node@22.23.3, so
// run:   node_modules/.bin/node chain.mjs [-n N] [-warmup W] [-v]
// If started with an older node (e.g. the system Node 20: `node chain.mjs`), this
// script re-runs itself with node_modules/.bin/node.
//
// Side-by-side benchmark peer: the "2-call chain" through UTCP's code-mode.
// server-everything (node_modules/.bin/mcp-server-everything, default stdio
// transport) is registered as an MCP manual "everything" (server key "everything")
// of a CodeModeUtcpClient. One execution = one client.callToolChain(CHAIN_CODE): a
// fresh V8 isolate in which the code calls get-sum {a:1,b:2}, then echo with the
// sum's text, and returns the echo's text. W untimed executions, then N timed ones.
// Prints ONE JSON line on stdout; diagnostics go to stderr.
//
// code-mode names MCP tools "<manual>.<server>.<tool>" and exposes them in the
// isolate as <manual>.<server>_<tool> with non-identifier characters turned into
// "_": here everything.everything_get_sum and everything.everything_echo. Tool calls
// are synchronous inside the isolate (applySyncPromise), so the code uses no await.
// @utcp/mcp returns a single text content item as its text (JSON-parsed or
// number-parsed if possible), so get-sum's result is the string
// "The sum of 1 and 2 is 3." and echo's is "Echo: The sum of 1 and 2 is 3.".
// An MCP tool error (isError) is NOT thrown into the isolate: its message text comes
// back as an ordinary result, so each result is compared with the exact expected text.
//
// @utcp/sdk and @utcp/mcp console.log several lines per tool call (to stdout).
// They are discarded by default (so stdout carries only the JSON line and the
// timing is not dominated by terminal writes); -v sends them to stderr instead.

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const binDir = join(here, "node_modules", ".bin");

const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  const localNode = join(binDir, "node");
  if (!existsSync(localNode)) {
    console.error(`chain.mjs: needs Node >= 22 (running ${process.version}) and ${localNode} is missing; run npm install`);
    process.exit(2);
  }
  console.error(`chain.mjs: ${process.version} is too old for isolated-vm 6; re-running with ${localNode}`);
  const r = spawnSync(localNode, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: "inherit" });
  process.exit(r.status ?? 1);
}

function usage(msg) {
  if (msg) console.error(`chain.mjs: ${msg}`);
  console.error("usage: node chain.mjs [-n N] [-warmup W] [-v]");
  process.exit(2);
}

let n = 100;
let warmup = 10;
let verbose = false;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i].replace(/^--/, "-");
  const intArg = () => {
    const v = argv[++i];
    if (v === undefined || !/^\d+$/.test(v)) usage(`${a} needs a non-negative integer`);
    return Number(v);
  };
  if (a === "-n") n = intArg();
  else if (a === "-warmup") warmup = intArg();
  else if (a === "-v") verbose = true;
  else if (a === "-h" || a === "-help") usage();
  else usage(`unknown argument ${argv[i]}`);
}
if (n < 1) usage("-n must be >= 1");

const log = (...args) => console.error("chain.mjs:", ...args);

// The UTCP packages log per call with console.log/info/warn; keep stdout for the
// result line only.
const toStderr = (...args) => { if (verbose) console.error(...args); };
console.log = toStderr;
console.info = toStderr;
console.warn = toStderr;
console.debug = toStderr;

const { CodeModeUtcpClient } = await import("@utcp/code-mode");
await import("@utcp/mcp"); // registers the "mcp" call template type and protocol

const version = JSON.parse(readFileSync(join(here, "node_modules", "@utcp", "code-mode", "package.json"), "utf8")).version;

// server-everything runs on whatever `node` its shebang finds on PATH, minus our
// local node_modules/.bin (so it is the same node the other benchmarks' servers use,
// even under `npm run`, which puts node_modules/.bin first).
const serverBin = join(binDir, "mcp-server-everything");
if (!existsSync(serverBin)) {
  log(`${serverBin} is missing; run npm install`);
  process.exit(2);
}
const serverPath = (process.env.PATH || "").split(delimiter).filter((p) => p && p !== binDir && p !== join(here, "node_modules", ".bin/")).join(delimiter);
const serverNode = spawnSync("node", ["--version"], { env: { ...process.env, PATH: serverPath }, encoding: "utf8" }).stdout?.trim();
log(`peer @utcp/code-mode ${version} on node ${process.version}; server ${serverBin} on node ${serverNode}`);

const CHAIN_CODE = `
const sum = everything.everything_get_sum({ a: 1, b: 2 });
const echo = everything.everything_echo({ message: typeof sum === "string" ? sum : JSON.stringify(sum) });
return echo;
`;

const EXPECTED = "Echo: The sum of 1 and 2 is 3.";

let client;
let exitCode = 0;
try {
  const t0 = process.hrtime.bigint();
  client = await CodeModeUtcpClient.create(here, null);
  const reg = await client.registerManual({
    name: "everything",
    call_template_type: "mcp",
    config: {
      mcpServers: {
        everything: {
          transport: "stdio",
          command: serverBin,
          args: [],
          env: { PATH: serverPath },
        },
      },
    },
  });
  if (!reg.success) throw new Error(`registerManual failed: ${JSON.stringify(reg.errors)}`);
  const names = (await client.getTools()).map((t) => t.name);
  for (const want of ["everything.everything.get-sum", "everything.everything.echo"]) {
    if (!names.includes(want)) throw new Error(`tool ${want} not registered; have ${names.join(", ")}`);
  }
  const setupMs = Number(process.hrtime.bigint() - t0) / 1e6;
  log(`set-up (create client + spawn server + initialize + tools/list): ${setupMs.toFixed(1)} ms; ${names.length} tools registered`);

  const runOnce = async () => {
    const { result, logs } = await client.callToolChain(CHAIN_CODE);
    const text = typeof result === "string" ? result : JSON.stringify(result);
    // A failed execution comes back as result null plus an "[ERROR] ..." log line, and
    // an MCP tool error (isError) comes back as its message *text*, not a throw (and
    // "MCP error -32602 ..." contains a "3"), so insist on the exact expected echo.
    if (result === null || result === undefined || !text.includes("3") || text !== EXPECTED || logs.some((l) => l.startsWith("[ERROR]"))) {
      throw new Error(`chain gave a bad result: ${JSON.stringify({ result, logs })}`);
    }
    return text;
  };

  for (let i = 0; i < warmup; i++) {
    const text = await runOnce();
    if (i === 0) log(`first result: ${JSON.stringify(text)}`);
  }
  const ms = [];
  for (let i = 0; i < n; i++) {
    const s = process.hrtime.bigint();
    await runOnce();
    ms.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  ms.sort((x, y) => x - y);
  // Nearest-rank percentiles.
  const pct = (p) => ms[Math.min(ms.length - 1, Math.max(0, Math.ceil((p / 100) * ms.length) - 1))];
  const round = (x) => Math.round(x * 1000) / 1000;
  const out = {
    peer: "@utcp/code-mode",
    version,
    node: process.version,
    n,
    p50_ms: round(pct(50)),
    p95_ms: round(pct(95)),
    mean_ms: round(ms.reduce((s, x) => s + x, 0) / ms.length),
    min_ms: round(ms[0]),
  };
  process.stdout.write(JSON.stringify(out) + "\n");
} catch (e) {
  exitCode = 1;
  log("FAILED:", e && e.stack ? e.stack : e);
} finally {
  if (client) {
    // Closes the MCP session, which ends the server child process.
    const closed = await Promise.race([
      client.close().then(() => true, (e) => { log("close failed:", e); return false; }),
      new Promise((r) => setTimeout(() => r(false), 5000).unref()),
    ]);
    if (!closed) log("client.close() did not finish in 5 s; exiting anyway");
  }
}
process.exit(exitCode);
