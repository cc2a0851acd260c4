// The official TypeScript Tasks-extension requester
// (@modelcontextprotocol/ext-tasks, on top of the SDK v2 client
// @modelcontextprotocol/client) running run_python as a task of `serve -http`
// on protocol 2026-07-28.
//
//   MCP_TOKEN=... node tasks.mjs URL complete|cancel
//
// The client connects with version negotiation "auto" (server/discover, then
// 2026-07-28), and createTaskSessionFromClient makes a task session of it.
// The SDK v2 client cannot carry Tasks traffic itself (its 2026-07-28 codec
// rejects a result whose resultType is "task"), so the session gets the raw
// path the extension asks for: rawDispatch is a small request coordinator of
// this script's own, sending the JSON-RPC request through the client's
// transport (the same HTTP endpoint, bearer token and MCP-Protocol-Version /
// Mcp-Method / Mcp-Name headers) under request ids of its own, and taking
// their responses off the transport before the client sees them;
// v2RequestFraming is the negotiated version, this client's info and its
// capabilities with extensions["io.modelcontextprotocol/tasks"] = {}, which
// the library writes into each request's _meta.
//
// complete runs a program printing "begun", reporting progress, sleeping 2 s
// and printing "ended", and settles it. cancel runs `time.sleep(60)`, cancels
// the task through the execution's cancel() once it exists, and settles it.
// The output is one JSON line {"mode", "protocolVersion", "task", "taskId",
// "status", "serverStatus", "isError", "text", "session"}: task whether the
// server answered with a task (CreateTaskResult) rather than an immediate
// result, taskId its id (null for an immediate result), status the settled
// outcome's status ("completed", "failed" or "cancelled"; the library settles
// a cancel on the server's ack), serverStatus the task's status as the server
// last reported it (for cancel, read back with tasks/get until terminal, at
// most 10 s), isError, text (the text content joined) and session
// (structuredContent.session) those of the tool result, or null when there is
// none. Any failure (a call that throws, another
// protocol, a session without the Tasks extension) exits 1. TASKS_TRACE=1
// writes each raw request and response to stderr.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const [url, mode] = process.argv.slice(2);
const token = process.env.MCP_TOKEN ?? "";
const trace = process.env.TASKS_TRACE === "1";
const wantVersion = "2026-07-28";
const TASKS = "io.modelcontextprotocol/tasks";

function fail(msg) {
  process.stderr.write(`tasks.mjs ${mode}: ${msg}\n`);
  process.exit(1);
}

const calls = {
  complete: {
    code: "from mcp import runtime\nimport time\nprint('begun', flush=True)\nruntime.report_progress(1, 2, 'half')\ntime.sleep(2)\nprint('ended')",
    timeout: 60,
  },
  cancel: { code: "import time\ntime.sleep(60)", timeout: 120 },
};

if (!url || !calls[mode]) fail("usage: MCP_TOKEN=... node tasks.mjs URL complete|cancel");

function textOf(res) {
  return (res?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

function describe(err) {
  const parts = [err?.stack ?? String(err)];
  for (let c = err?.cause; c; c = c.cause) parts.push(`caused by: ${c?.stack ?? String(c)}`);
  return parts.join("\n");
}

// A request coordinator owning its request ids and response matching: each
// request goes out through the connected transport under an id the client
// never issued, and the response bearing that id is handed back here instead
// of to the client. It answers as the extension's RawClientDispatch does:
// {kind: "result", result} or {kind: "error", error}.
function rawCoordinator(transport) {
  const pending = new Map();
  let next = 0;
  const clientOnMessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const id = message?.id;
    if (typeof id === "string" && pending.has(id) && ("result" in message || "error" in message)) {
      if (trace) process.stderr.write(`<- ${JSON.stringify(message)}\n`);
      const settle = pending.get(id);
      pending.delete(id);
      settle(message);
      return;
    }
    clientOnMessage?.call(transport, message, extra);
  };
  return async (request, options = {}) => {
    const id = `ext-tasks-${++next}`;
    const message = { jsonrpc: "2.0", id, method: request.method, ...(request.params === undefined ? {} : { params: request.params }) };
    const { signal, context = {} } = options;
    signal?.throwIfAborted();
    const response = new Promise((resolve, reject) => {
      let timer;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        pending.delete(id);
        done();
        reject(signal.reason ?? new Error("aborted"));
      };
      pending.set(id, (m) => {
        done();
        resolve(m);
      });
      signal?.addEventListener("abort", onAbort, { once: true });
      const ms = context.requestTimeoutMs ?? 120000;
      timer = setTimeout(() => {
        pending.delete(id);
        signal?.removeEventListener("abort", onAbort);
        reject(new Error(`${request.method}: no response in ${ms} ms`));
      }, ms);
    });
    if (trace) process.stderr.write(`-> ${JSON.stringify(message)}\n`);
    try {
      await transport.send(message, {
        ...(signal === undefined ? {} : { requestSignal: signal }),
        ...(context.headers === undefined ? {} : { headers: context.headers }),
      });
    } catch (err) {
      pending.get(id)?.({ jsonrpc: "2.0", id, transportError: err });
      throw err;
    }
    const m = await response;
    if (m.transportError) throw m.transportError;
    return "error" in m ? { kind: "error", error: m.error } : { kind: "result", result: m.result };
  };
}

let client;
let session;
try {
  const clientInfo = { name: "integration-ts2-tasks", version: "1.0.0" };
  const clientCapabilities = { extensions: { [TASKS]: {} } };
  client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: "auto" } });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  const protocolVersion = client.getNegotiatedProtocolVersion();
  if (protocolVersion !== wantVersion) fail(`negotiated protocol ${protocolVersion}, want ${wantVersion}`);
  if (!client.getServerCapabilities()?.extensions?.[TASKS]) fail(`the server does not offer ${TASKS}: ${JSON.stringify(client.getServerCapabilities())}`);

  session = createTaskSessionFromClient(client, {
    endpointId: `bridge-tasks ${url}`,
    rawDispatch: rawCoordinator(transport),
    v2RequestFraming: { protocolVersion, clientInfo, clientCapabilities },
    onError: (err) => process.stderr.write(`tasks.mjs ${mode}: session error: ${describe(err)}\n`),
  });
  if (session.capabilities.execution !== true) fail(`the task session cannot execute tasks: ${JSON.stringify(session.capabilities)}`);

  const execution = await session.callTool("run_python", calls[mode], { requestTimeoutMs: 130000 });
  const isTask = execution.kind === "task";
  const taskId = isTask ? execution.handle.taskId : null;
  if (mode === "cancel") {
    if (!isTask) await new Promise((r) => setTimeout(r, 1500));
    await execution.cancel();
  }
  const { outcome, lastTask } = await execution.settle();
  // The library settles a cancelled execution on the server's ack of
  // tasks/cancel (cancellation is cooperative and eventually consistent), so
  // the server's own view is read back with tasks/get until it is terminal.
  let serverStatus = lastTask?.status ?? null;
  if (mode === "cancel" && isTask) {
    const controller = session.task(taskId);
    for (let i = 0; i < 20; i++) {
      serverStatus = (await controller.snapshot()).status;
      if (["completed", "failed", "cancelled"].includes(serverStatus)) break;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  let result = null;
  if (outcome.status === "completed") result = resultFromTaskOutcome(outcome);
  else if (outcome.status === "failed") process.stderr.write(`tasks.mjs ${mode}: task failed: ${describe(outcome.error)}\n`);
  const out = {
    mode,
    protocolVersion,
    task: isTask,
    taskId,
    status: outcome.status,
    serverStatus,
    isError: result ? result.isError === true : null,
    text: result ? textOf(result) : null,
    session: result?.structuredContent?.session ?? null,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
  await session.close();
  session = undefined;
  await client.close();
  process.exit(0);
} catch (err) {
  fail(describe(err));
}
