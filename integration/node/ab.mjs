// An A/B of bridge binaries as a new user sees them: the TypeScript SDK
// client drives each binary's `run` over stdio, and the binaries take
// turns call by call (in a new random order each round), so that they
// share whatever state the machine is in. One run prints one JSON line:
// per binary the warm run_python p50/p95, a proxied server-everything
// echo timed inside the sandbox, the get-sum → echo chain, the bridge
// process's CPU per warm call; and a direct call of the same client
// library to the same server, the base of the proxied ratio.
//
//   node ab.mjs NAME=BINARY NAME=BINARY ...   one run (scripts/ab runs it)
//   node ab.mjs --summary FILE [BASE]         the medians of FILE's runs,
//                                             each ratio taken within a run
//
// The environment names the engine (MCP_BRIDGE_RUNTIME) and the servers
// (MCP_SERVERS_CONFIG, with server-everything as "everything"); AB_WARM
// (default 400) and AB_CHAIN (150) set the counts.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pct = (a, p) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const median = (a) => pct(a, 50);
const r3 = (x) => Math.round(x * 1000) / 1000;

if (process.argv[2] === "--summary") {
  summary(process.argv[3], process.argv[4]);
  process.exit(0);
}

const bins = process.argv.slice(2).map((a) => {
  const i = a.indexOf("=");
  if (i <= 0) throw new Error(`want NAME=BINARY, got ${a}`);
  return [a.slice(0, i), a.slice(i + 1)];
});
if (bins.length < 2) throw new Error("want two binaries or more: NAME=BINARY NAME=BINARY ...");
const warmN = Number(process.env.AB_WARM || 400);
const chainN = Number(process.env.AB_CHAIN || 150);
const everything = join(dirname(fileURLToPath(import.meta.url)), "node_modules", ".bin", "mcp-server-everything");
const now = () => Number(process.hrtime.bigint()) / 1e6;
const shuffle = (a) => {
  const b = [...a];
  for (let i = b.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [b[i], b[j]] = [b[j], b[i]];
  }
  return b;
};
// cpuTicks is the user and system time of process pid, in clock ticks
// (1/100 s on Linux).
const cpuTicks = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return Number(f[11]) + Number(f[12]);
};

const clients = {};
const pids = {};
for (const [name, bin] of bins) {
  const t = new StdioClientTransport({ command: bin, args: ["run"], env: process.env, stderr: "inherit" });
  const c = new Client({ name: "ab-" + name, version: "1.0.0" });
  await c.connect(t);
  clients[name] = c;
  pids[name] = t.pid;
}
const names = bins.map((b) => b[0]);
const call = async (name, args, want) => {
  const res = await clients[name].callTool({ name: "run_python", arguments: args }, undefined, { timeout: 300000 });
  const text = res.content.map((c) => c.text ?? "").join("");
  if (res.isError || (want !== undefined && !text.includes(want))) {
    throw new Error(`${name}: run_python ${JSON.stringify(args)}: ${text}`);
  }
  return text;
};
const out = {};
for (const n of names) out[n] = { warm: [], prox: [], chain: [] };

// The warm call, after 30 warm-up calls each.
for (let i = 0; i < 30; i++) for (const n of shuffle(names)) await call(n, { code: "print(1)" }, "1");
const cpu0 = {};
for (const n of names) cpu0[n] = cpuTicks(pids[n]);
for (let i = 0; i < warmN; i++) {
  for (const n of shuffle(names)) {
    const t = now();
    await call(n, { code: "print(1)" }, "1");
    out[n].warm.push(now() - t);
  }
}
const cpuUs = {};
for (const n of names) cpuUs[n] = ((cpuTicks(pids[n]) - cpu0[n]) * 10000) / warmN;

// The proxied echo timed in the sandbox, against the same call made
// directly, in interleaved batches.
const direct = new Client({ name: "ab-direct", version: "1.0.0" });
await direct.connect(new StdioClientTransport({ command: everything, args: [], env: process.env, stderr: "ignore" }));
const echoDirect = async () => {
  const r = await direct.callTool({ name: "echo", arguments: { message: "x" } });
  if (r.isError) throw new Error("direct echo failed");
};
for (let i = 0; i < 10; i++) await echoDirect();
for (const n of names) {
  await call(n, { code: "for _ in range(10):\n    await mcp_everything.echo(message='warm-up')", servers: ["everything"] });
}
const proxCode = `import json, time
out = []
for i in range(25):
    t = time.perf_counter_ns()
    await mcp_everything.echo(message=str(i))
    out.append(time.perf_counter_ns() - t)
print(json.dumps(out))`;
const directMs = [];
for (let r = 0; r < 8; r++) {
  for (const n of shuffle(names)) {
    for (let i = 0; i < 8; i++) {
      const t = now();
      await echoDirect();
      directMs.push(now() - t);
    }
    for (const ns of JSON.parse(await call(n, { code: proxCode, servers: ["everything"], timeout: 120 }))) {
      out[n].prox.push(ns / 1e6);
    }
  }
}

// The get-sum → echo chain.
const chainCode = "s = await mcp_everything.get_sum(a=1, b=2)\nprint(await mcp_everything.echo(message=s))";
for (let i = 0; i < 10; i++) for (const n of names) await call(n, { code: chainCode, servers: ["everything"] }, "3");
for (let i = 0; i < chainN; i++) {
  for (const n of shuffle(names)) {
    const t = now();
    await call(n, { code: chainCode, servers: ["everything"] }, "3");
    out[n].chain.push(now() - t);
  }
}

await direct.close();
for (const n of names) await clients[n].close();
const res = { direct_p50: r3(median(directMs)), bins: {} };
for (const n of names) {
  const o = out[n];
  res.bins[n] = {
    warm_p50: r3(median(o.warm)),
    warm_p95: r3(pct(o.warm, 95)),
    prox_p50: r3(median(o.prox)),
    chain_p50: r3(median(o.chain)),
    chain_p95: r3(pct(o.chain, 95)),
    cpu_us: Math.round(cpuUs[n]),
  };
}
process.stdout.write(JSON.stringify(res) + "\n");
process.exit(0);

// summary prints, per engine of the runs in file (JSON lines of
// {engine, load, r}), each binary's median figures and its ratios to
// base (default: the first binary) taken run by run.
function summary(file, base) {
  const runs = readFileSync(file, "utf8").split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l)).filter((x) => x.r);
  for (const engine of [...new Set(runs.map((x) => x.engine))]) {
    const rs = runs.filter((x) => x.engine === engine);
    const names = Object.keys(rs[0].r.bins);
    const b = base || names[0];
    console.log(`\n${engine}: ${rs.length} runs, load average at their starts ${rs.map((x) => x.load).join(", ")}`);
    console.log(["figure", ...names.map((n) => `${n} (ms)`), ...names.filter((n) => n !== b).map((n) => `${n}/${b} median [min–max]`)].join(" | "));
    for (const k of ["warm_p50", "warm_p95", "prox_p50", "chain_p50", "chain_p95", "cpu_us"]) {
      const cells = [k, ...names.map((n) => String(r3(median(rs.map((x) => x.r.bins[n][k])))))];
      for (const n of names.filter((n) => n !== b)) {
        const q = rs.map((x) => x.r.bins[n][k] / x.r.bins[b][k]);
        cells.push(`${median(q).toFixed(3)} [${Math.min(...q).toFixed(2)}–${Math.max(...q).toFixed(2)}]`);
      }
      console.log(cells.join(" | "));
    }
    const d = median(rs.map((x) => x.r.direct_p50));
    console.log(`direct call, same client library and server: p50 ${r3(d)} ms; proxied/direct: ` +
      names.map((n) => `${n} ${median(rs.map((x) => x.r.bins[n].prox_p50 / x.r.direct_p50)).toFixed(2)}×`).join(", "));
  }
}
