// A TypeScript SDK client that follows run_python calls live: progress
// notifications, timeouts kept alive by progress, cancellation.
//
//   node live.mjs BRIDGE_BINARY < steps.json > results.json
//
// steps.json is a JSON array of steps, run in order on one client (one
// bridge session):
//   {"args": {run_python arguments},
//    "progress": true,                 follow the call (onprogress; default true)
//    "timeout": 300000,                the request timeout, ms
//    "resetTimeoutOnProgress": true,   default true
//    "abortAfterMs": 1000}             abort the call (AbortController) then
// The output is {"steps": [{notifications: [{atMs, progress, total, message}],
// text, isError, structuredContent, error: {code, message} | null, elapsedMs}]};
// atMs and elapsedMs are measured from the call's start.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { readFileSync } from "node:fs";

const [bridge] = process.argv.slice(2);
const steps = JSON.parse(readFileSync(0, "utf8"));
const transport = new StdioClientTransport({ command: bridge, args: ["run"], env: process.env, stderr: "inherit" });
const client = new Client({ name: "integration-ts-live", version: "1.0.0" });
await client.connect(transport);

const out = [];
for (const step of steps) {
  const notifications = [];
  const began = performance.now();
  const ms = () => Math.round((performance.now() - began) * 10) / 10;
  const options = {
    timeout: step.timeout ?? 300000,
    resetTimeoutOnProgress: step.resetTimeoutOnProgress ?? true,
  };
  if (step.progress ?? true) {
    options.onprogress = (p) => notifications.push({ atMs: ms(), progress: p.progress, total: p.total ?? null, message: p.message ?? null });
  }
  let timer;
  if (step.abortAfterMs !== undefined) {
    const abort = new AbortController();
    options.signal = abort.signal;
    timer = setTimeout(() => abort.abort(new Error("aborted by the test")), step.abortAfterMs);
  }
  const rec = { notifications, text: "", isError: false, structuredContent: null, error: null, elapsedMs: 0 };
  try {
    const res = await client.callTool({ name: "run_python", arguments: step.args }, undefined, options);
    rec.text = res.content.map((c) => c.text ?? "").join("");
    rec.isError = !!res.isError;
    rec.structuredContent = res.structuredContent ?? null;
  } catch (err) {
    rec.error = { code: err.code ?? null, message: String(err.message ?? err) };
  }
  clearTimeout(timer);
  rec.elapsedMs = ms();
  out.push(rec);
}
await client.close();
process.stdout.write(JSON.stringify({ steps: out }));
