// The official TypeScript SDK client for the tool-policy tests: it drives
// the bridge binary over stdio, with or without the elicitation
// capability, and answers the bridge's confirmation questions.
//
//   POLICY_ELICIT=accept-if:TEXT|none node policy.mjs BRIDGE_BINARY < calls.json > results.json
//
// With accept-if:TEXT the client declares elicitation and accepts a
// question whose message contains TEXT, declining the others; with none
// it declares no elicitation. calls.json is a JSON array of run_python
// argument objects; the output is {"results": [{text, isError}, ...],
// "questions": [message, ...]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { readFileSync } from "node:fs";

const [bridge] = process.argv.slice(2);
const calls = JSON.parse(readFileSync(0, "utf8"));
const mode = process.env.POLICY_ELICIT ?? "none";
const capabilities = mode === "none" ? {} : { elicitation: {} };
const client = new Client({ name: "integration-ts-policy", version: "1.0.0" }, { capabilities });
const questions = [];
if (mode !== "none") {
  const wanted = mode.replace(/^accept-if:/, "");
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    questions.push(req.params.message);
    return { action: req.params.message.includes(wanted) ? "accept" : "decline" };
  });
}
const transport = new StdioClientTransport({ command: bridge, args: ["run"], env: process.env, stderr: "inherit" });
await client.connect(transport);
const results = [];
for (const args of calls) {
  const res = await client.callTool({ name: "run_python", arguments: args }, undefined, { timeout: 300000 });
  results.push({ text: res.content.map((c) => c.text ?? "").join(""), isError: !!res.isError });
}
await client.close();
process.stdout.write(JSON.stringify({ results, questions }));
