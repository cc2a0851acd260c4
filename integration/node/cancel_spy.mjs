// A spy in front of a real MCP server for the cancellation tests: it runs
// the server and passes its stdio through untouched, and records what the
// client (the bridge) sends it.
//
//   CANCEL_SPY_LOG=cancelled.jsonl [CANCEL_SPY_CALLS=calls.jsonl] node cancel_spy.mjs SERVER [ARGS...]
//
// Every JSON-RPC message from the client with method notifications/cancelled
// is appended, one JSON object a line, to the file CANCEL_SPY_LOG names;
// every tools/call request to the file CANCEL_SPY_CALLS names, when set.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import readline from "node:readline";

const [command, ...args] = process.argv.slice(2);
const cancelledLog = process.env.CANCEL_SPY_LOG;
const callsLog = process.env.CANCEL_SPY_CALLS;
const server = spawn(command, args, { stdio: ["pipe", "inherit", "inherit"] });
process.stdin.pipe(server.stdin);
server.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
// The client closing our stdin ends the server's too (pipe does that);
// a signal to us goes to the server as well.
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => server.kill(sig));

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  const file = msg?.method === "notifications/cancelled" ? cancelledLog : msg?.method === "tools/call" ? callsLog : undefined;
  if (file) appendFileSync(file, JSON.stringify(msg) + "\n");
});
