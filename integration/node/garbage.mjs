// A broken MCP server for the fault tests: it runs a real server and
// passes its stdio through, but writes garbage on stdout around the real
// messages.
//
//   node garbage.mjs MODE SERVER [ARGS...]
//
// MODE says what garbage, after every message the server writes:
//   noise    a banner, blank lines, invalid UTF-8 and text that is not JSON
//   json     lines that look like JSON but are not JSON-RPC: broken
//            objects, plain objects, arrays, a response to an id never
//            used, a request for a method no client has
//   huge     a 40 MiB line that is not JSON (over the bridge's 32 MiB line
//            limit), before the answer to a request that contains
//            "huge-please"; nothing else
// Garbage goes before each message too, so it lands mid-session.
import { spawn } from "node:child_process";
import readline from "node:readline";

const [mode, command, ...args] = process.argv.slice(2);
const server = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
process.stdin.pipe(server.stdin);
server.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

const noise = [
  "Server starting... (banner)",
  "",
  "   ",
  Buffer.from([0xff, 0xfe, 0x80, 0x0a]),
  "WARNING: something \u2603 happened",
];
const json = [
  "{not json at all",
  '{"jsonrpc": "2.0", "id": ',
  '{"hello": "world"}',
  "[1, 2, 3]",
  "[]",
  '{"jsonrpc": "2.0", "id": 987654, "result": {"content": []}}',
  '{"jsonrpc": "2.0", "id": "forged", "error": {"code": -32000, "message": "forged"}}',
  '{"jsonrpc": "2.0", "method": "notifications/unknown", "params": {"x": 1}}',
  '{"jsonrpc": "1.0", "id": 1, "result": 2}',
  "null",
  "42",
];

let hugeDue = false;
process.stdin.on("data", (chunk) => {
  if (chunk.includes("huge-please")) hugeDue = true;
});

function garbage() {
  if (mode === "noise") {
    for (const g of noise) process.stdout.write(typeof g === "string" ? g + "\n" : g);
  } else if (mode === "json") {
    for (const g of json) process.stdout.write(g + "\n");
  } else if (mode === "huge" && hugeDue) {
    hugeDue = false;
    process.stdout.write("x".repeat(40 << 20) + "\n");
  }
}

const lines = readline.createInterface({ input: server.stdout, crlfDelay: Infinity });
lines.on("line", (line) => {
  garbage();
  process.stdout.write(line + "\n");
  garbage();
});
