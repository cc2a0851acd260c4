// Counts tokens with real tokenizers (js-tiktoken, offline ranks).
//
//   node tokens.mjs < texts.json > counts.json
//
// texts.json is a JSON array of strings; the output is an array of
// {"cl100k_base": n, "o200k_base": n}, one per string.
import { getEncoding } from "js-tiktoken";
import { readFileSync } from "node:fs";

const texts = JSON.parse(readFileSync(0, "utf8"));
if (!Array.isArray(texts) || texts.some((t) => typeof t !== "string")) {
  process.stderr.write("tokens.mjs: stdin must be a JSON array of strings\n");
  process.exit(2);
}
const encodings = ["cl100k_base", "o200k_base"].map((name) => [name, getEncoding(name)]);
const counts = texts.map((t) => Object.fromEntries(encodings.map(([name, enc]) => [name, enc.encode(t).length])));
process.stdout.write(JSON.stringify(counts));
