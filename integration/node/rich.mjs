// A TypeScript SDK client that reads rich results: images, embedded
// resources and resource links of run_python, and the linked files through
// resources/read.
//
//   node rich.mjs BRIDGE_BINARY < calls.json > results.json
//
// calls.json is a JSON array of run_python arguments, run in order on one
// client (one bridge session). The output is {"results": [{isError, text,
// content: [{type, mimeType, uri, size, bytes}], reads: [{uri, mimeType,
// bytes, sha256, text}]}]}: bytes is the decoded length of an image or a
// blob; every resource_link is read back with resources/read.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

const [bridge] = process.argv.slice(2);
const calls = JSON.parse(readFileSync(0, "utf8"));
const transport = new StdioClientTransport({ command: bridge, args: ["run"], env: process.env, stderr: "inherit" });
const client = new Client({ name: "integration-ts-rich", version: "1.0.0" });
await client.connect(transport);

const decoded = (b64) => Buffer.from(b64, "base64");
const results = [];
for (const args of calls) {
  const res = await client.callTool({ name: "run_python", arguments: args }, undefined, { timeout: 120000 });
  const rec = { isError: !!res.isError, text: "", content: [], reads: [] };
  for (const c of res.content) {
    switch (c.type) {
      case "text":
        rec.text += c.text;
        break;
      case "image":
        rec.content.push({ type: "image", mimeType: c.mimeType, bytes: decoded(c.data).length });
        break;
      case "resource": {
        const r = c.resource;
        rec.content.push({ type: "resource", mimeType: r.mimeType, uri: r.uri,
          bytes: r.blob !== undefined ? decoded(r.blob).length : Buffer.byteLength(r.text ?? "") });
        break;
      }
      case "resource_link":
        rec.content.push({ type: "resource_link", mimeType: c.mimeType ?? null, uri: c.uri, size: c.size ?? null });
        break;
      default:
        rec.content.push({ type: c.type });
    }
  }
  for (const c of res.content.filter((c) => c.type === "resource_link")) {
    const read = await client.readResource({ uri: c.uri });
    const r = read.contents[0];
    const data = r.blob !== undefined ? decoded(r.blob) : Buffer.from(r.text ?? "", "utf8");
    rec.reads.push({ uri: r.uri, mimeType: r.mimeType ?? null, bytes: data.length,
      sha256: createHash("sha256").update(data).digest("hex") });
  }
  results.push(rec);
}
await client.close();
process.stdout.write(JSON.stringify({ results }));
