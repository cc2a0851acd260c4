#!/usr/bin/env node
// record.mjs records the real tools/list answers of MCP servers published
// on npm, the fixtures of the tool-search evaluation
// (mcpbridge/toolsearch/eval_test.go): one servers/<server>.json per server,
//
//   {"server": "<short name>", "package": "<npm name>", "version": "<exact>",
//    "recorded": "<YYYY-MM-DD>", "tools": [{name, title, description, inputSchema}, ...]}
//
// To re-record (Node 20 or later, the npm registry reachable):
//
//   node mcpbridge/toolsearch/testdata/searcheval/record.mjs [--only server,server] [--date YYYY-MM-DD]
//
// Every package is installed at the exact version pinned in SERVERS below,
// each into a folder of its own under $SEARCHEVAL_PKGS (default
// /tmp/searcheval-pkgs; never into the repository), with
// `npm install --ignore-scripts` so that nothing downloads a browser or a
// binary; the MCP TypeScript SDK client (@modelcontextprotocol/sdk, SDK_VERSION)
// goes into $SEARCHEVAL_PKGS/_sdk. A folder that already holds the pinned
// version is reused. Each server is started over stdio with HOME pointing at a
// scratch folder and only the environment listed with it: dummy credentials,
// since every server here lists its tools before it uses them; no server
// needs the network to answer tools/list. To add a server, add a line to
// SERVERS (pin the version that `npm view PKG version` shows: npm silently
// falls back to an older release when the newest wants a newer Node), run the
// script with --only NAME, and write queries for its tools in queries.json.
//
// Packages, versions and what each needed (recorded 2026-11-23 on Node 20, the
// next six 2026-11-24, the last four 2026-11-25):
//
//   everything          @modelcontextprotocol/server-everything 2026.8.31   args: stdio
//   filesystem          @modelcontextprotocol/server-filesystem 2026.8.31   args: a scratch folder
//   memory              @modelcontextprotocol/server-memory 2026.8.31       MEMORY_FILE_PATH
//   sequential-thinking @modelcontextprotocol/server-sequential-thinking 2026.8.31
//   github              @modelcontextprotocol/server-github 2025.4.8        GITHUB_PERSONAL_ACCESS_TOKEN (dummy)
//   gitlab              @modelcontextprotocol/server-gitlab 2025.4.25       GITLAB_PERSONAL_ACCESS_TOKEN (dummy)
//   slack               @modelcontextprotocol/server-slack 2025.4.25        SLACK_BOT_TOKEN, SLACK_TEAM_ID (dummy)
//   google-maps         @modelcontextprotocol/server-google-maps 0.6.2      GOOGLE_MAPS_API_KEY (dummy)
//   brave-search        @modelcontextprotocol/server-brave-search 0.6.2     BRAVE_API_KEY (dummy)
//   puppeteer           @modelcontextprotocol/server-puppeteer 2025.5.12    (no browser is started to list)
//   postgres            @modelcontextprotocol/server-postgres 0.6.2         args: a database URL (not connected to)
//   gdrive              @modelcontextprotocol/server-gdrive 2025.1.14       GDRIVE_CREDENTIALS_PATH (a dummy file)
//   everart             @modelcontextprotocol/server-everart 0.6.2          EVERART_API_KEY (dummy)
//   aws-kb-retrieval    @modelcontextprotocol/server-aws-kb-retrieval 0.6.2 AWS_* (dummy)
//   desktop-commander   @wonderwhy-er/desktop-commander 0.2.52              node --import no-docker.mjs (see NO_DOCKER)
//   playwright          @playwright/mcp 0.0.83                              (no browser is started to list)
//   kubernetes          mcp-server-kubernetes 4.1.7                         KUBECONFIG (a dummy file)
//   notion              @notionhq/notion-mcp-server 2.5.2                   NOTION_TOKEN (dummy)
//   firecrawl           firecrawl-mcp 3.26.0                                FIRECRAWL_API_KEY (dummy)
//   tavily              tavily-mcp 0.2.22                                   TAVILY_API_KEY (dummy)
//   context7            @upstash/context7-mcp 4.1.1
//   exa                 exa-mcp-server 3.4.1                                EXA_API_KEY (dummy)
//   airtable            airtable-mcp-server 1.14.0                          AIRTABLE_API_KEY (dummy)
//   sentry              @sentry/mcp-server 0.36.0                           SENTRY_ACCESS_TOKEN (dummy); 0.37.0 and later want Node 22.13
//   mongodb             mongodb-mcp-server 3.0.4                            (no connection string: nothing is connected to)
//   git                 @cyanheads/git-mcp-server 2.15.3                    (no repository is opened to list)
//   todoist             @doist/todoist-mcp 11.0.0                           TODOIST_API_KEY (dummy)
//   hubspot             @hubspot/mcp-server 0.4.0                           PRIVATE_APP_ACCESS_TOKEN (dummy)
//   linear              linear-mcp-server 0.1.0                             LINEAR_API_KEY (dummy)
//   supabase            @supabase/mcp-server-supabase 0.13.0                SUPABASE_ACCESS_TOKEN (dummy); --features: all default ones but docs (it fetches its description)
//   stripe              @stripe/mcp 0.2.5                                   args: --tools=all --api-key (dummy); 0.3.0 and later only relay to mcp.stripe.com
//   gmail               @gongrzhe/server-gmail-autoauth-mcp 1.1.11          GMAIL_OAUTH_PATH (dummy OAuth client keys), GMAIL_CREDENTIALS_PATH
//   datadog             @winor30/mcp-server-datadog 1.8.0                   DATADOG_API_KEY, DATADOG_APP_KEY (dummy)
//
// The fixtures are the servers' answers as they were (name, title,
// description and inputSchema of each tool, in the server's order). A server that does not answer within TIMEOUT_MS is
// reported and left out (its old fixture stays).

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const SDK_VERSION = "1.32.2";
const TIMEOUT_MS = 60_000;
const HERE = path.dirname(fileURLToPath(import.meta.url));
const PKGS = process.env.SEARCHEVAL_PKGS || "/tmp/searcheval-pkgs";
const SCRATCH = fs.mkdtempSync(path.join(os.tmpdir(), "searcheval-run-"));

// Scratch files some servers want to exist.
const dir = (name) => {
  const p = path.join(SCRATCH, name);
  fs.mkdirSync(p, { recursive: true });
  return p;
};
const file = (name, text) => {
  const p = path.join(SCRATCH, name);
  fs.writeFileSync(p, text);
  return p;
};

const DUMMY = "dummy-token-for-listing-tools";

// SERVERS: short name, npm package, exact version, the bin to run (from the
// package's "bin"), its arguments and environment.
const SERVERS = [
  { server: "everything", pkg: "@modelcontextprotocol/server-everything", version: "2026.8.31", bin: "dist/index.js", args: ["stdio"] },
  { server: "filesystem", pkg: "@modelcontextprotocol/server-filesystem", version: "2026.8.31", bin: "dist/index.js", args: () => [dir("fs-root")] },
  { server: "memory", pkg: "@modelcontextprotocol/server-memory", version: "2026.8.31", bin: "dist/index.js", env: () => ({ MEMORY_FILE_PATH: path.join(SCRATCH, "memory.jsonl") }) },
  { server: "sequential-thinking", pkg: "@modelcontextprotocol/server-sequential-thinking", version: "2026.8.31", bin: "dist/index.js" },
  { server: "github", pkg: "@modelcontextprotocol/server-github", version: "2025.4.8", bin: "dist/index.js", env: { GITHUB_PERSONAL_ACCESS_TOKEN: DUMMY } },
  { server: "gitlab", pkg: "@modelcontextprotocol/server-gitlab", version: "2025.4.25", bin: "dist/index.js", env: { GITLAB_PERSONAL_ACCESS_TOKEN: DUMMY } },
  { server: "slack", pkg: "@modelcontextprotocol/server-slack", version: "2025.4.25", bin: "dist/index.js", env: { SLACK_BOT_TOKEN: "xoxb-" + DUMMY, SLACK_TEAM_ID: "T00000000" } },
  { server: "google-maps", pkg: "@modelcontextprotocol/server-google-maps", version: "0.6.2", bin: "dist/index.js", env: { GOOGLE_MAPS_API_KEY: DUMMY } },
  { server: "brave-search", pkg: "@modelcontextprotocol/server-brave-search", version: "0.6.2", bin: "dist/index.js", env: { BRAVE_API_KEY: DUMMY } },
  { server: "puppeteer", pkg: "@modelcontextprotocol/server-puppeteer", version: "2025.5.12", bin: "dist/index.js" },
  { server: "postgres", pkg: "@modelcontextprotocol/server-postgres", version: "0.6.2", bin: "dist/index.js", args: ["postgresql://127.0.0.1:5432/none"] },
  { server: "gdrive", pkg: "@modelcontextprotocol/server-gdrive", version: "2025.1.14", bin: "dist/index.js", env: () => ({ GDRIVE_CREDENTIALS_PATH: file("gdrive-credentials.json", "{}") }) },
  { server: "everart", pkg: "@modelcontextprotocol/server-everart", version: "0.6.2", bin: "dist/index.js", env: { EVERART_API_KEY: DUMMY } },
  { server: "aws-kb-retrieval", pkg: "@modelcontextprotocol/server-aws-kb-retrieval", version: "0.6.2", bin: "dist/index.js", env: { AWS_ACCESS_KEY_ID: "AKIADUMMY", AWS_SECRET_ACCESS_KEY: DUMMY, AWS_REGION: "us-east-1" } },
  { server: "desktop-commander", pkg: "@wonderwhy-er/desktop-commander", version: "0.2.52", bin: "dist/index.js", node: () => ["--import", file("no-docker.mjs", NO_DOCKER)] },
  { server: "playwright", pkg: "@playwright/mcp", version: "0.0.83", bin: "cli.js" },
  { server: "kubernetes", pkg: "mcp-server-kubernetes", version: "4.1.7", bin: "dist/index.js", env: () => ({ KUBECONFIG: file("kubeconfig", KUBECONFIG) }) },
  { server: "notion", pkg: "@notionhq/notion-mcp-server", version: "2.5.2", bin: "bin/cli.mjs", env: { NOTION_TOKEN: "ntn_" + DUMMY } },
  { server: "firecrawl", pkg: "firecrawl-mcp", version: "3.26.0", bin: "dist/index.js", env: { FIRECRAWL_API_KEY: "fc-" + DUMMY } },
  { server: "tavily", pkg: "tavily-mcp", version: "0.2.22", bin: "build/index.js", env: { TAVILY_API_KEY: "tvly-" + DUMMY } },
  { server: "context7", pkg: "@upstash/context7-mcp", version: "4.1.1", bin: "dist/index.js" },
  { server: "exa", pkg: "exa-mcp-server", version: "3.4.1", bin: "dist/stdio.cjs", env: { EXA_API_KEY: DUMMY } },
  { server: "airtable", pkg: "airtable-mcp-server", version: "1.14.0", bin: "dist/main.js", env: { AIRTABLE_API_KEY: "pat" + DUMMY } },
  { server: "sentry", pkg: "@sentry/mcp-server", version: "0.36.0", bin: "dist/index.js", env: { SENTRY_ACCESS_TOKEN: DUMMY } },
  { server: "mongodb", pkg: "mongodb-mcp-server", version: "3.0.4", bin: "dist/esm/index.js" },
  { server: "git", pkg: "@cyanheads/git-mcp-server", version: "2.15.3", bin: "dist/index.js" },
  { server: "todoist", pkg: "@doist/todoist-mcp", version: "11.0.0", bin: "dist/main.js", env: { TODOIST_API_KEY: DUMMY } },
  { server: "hubspot", pkg: "@hubspot/mcp-server", version: "0.4.0", bin: "dist/index.js", env: { PRIVATE_APP_ACCESS_TOKEN: "pat-na1-" + DUMMY } },
  { server: "linear", pkg: "linear-mcp-server", version: "0.1.0", bin: "build/index.js", env: { LINEAR_API_KEY: "lin_api_" + DUMMY } },
  { server: "supabase", pkg: "@supabase/mcp-server-supabase", version: "0.13.0", bin: "dist/cli.js", args: ["--features=account,database,debugging,development,functions,branching"], env: { SUPABASE_ACCESS_TOKEN: "sbp_" + DUMMY } },
  { server: "stripe", pkg: "@stripe/mcp", version: "0.2.5", bin: "dist/index.js", args: ["--tools=all", "--api-key=sk_test_" + DUMMY] },
  { server: "gmail", pkg: "@gongrzhe/server-gmail-autoauth-mcp", version: "1.1.11", bin: "dist/index.js", env: () => ({ GMAIL_OAUTH_PATH: file("gmail-oauth.keys.json", JSON.stringify({ installed: { client_id: "dummy.apps.googleusercontent.com", client_secret: DUMMY, redirect_uris: ["http://localhost"] } })), GMAIL_CREDENTIALS_PATH: path.join(SCRATCH, "gmail-credentials.json") }) },
  { server: "datadog", pkg: "@winor30/mcp-server-datadog", version: "1.8.0", bin: "build/index.js", env: { DATADOG_API_KEY: DUMMY, DATADOG_APP_KEY: DUMMY } },
];

// NO_DOCKER, preloaded into desktop-commander, hides /.dockerenv: inside a
// container that server writes the container's mount points into its tool
// descriptions, which would record the recording machine, not the server.
const NO_DOCKER = `import fs from "node:fs";
const existsSync = fs.existsSync;
fs.existsSync = (p) => p !== "/.dockerenv" && existsSync(p);
`;

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://127.0.0.1:6443"}
  name: none
contexts:
- context: {cluster: none, user: none}
  name: none
current-context: none
users:
- name: none
  user: {token: dummy}
`;

function parseArgs(argv) {
  const o = { only: null, date: "2026-11-23" };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--only") o.only = new Set(argv[++i].split(","));
    else if (argv[i] === "--date") o.date = argv[++i];
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return o;
}

// install puts pkg@version into folder unless it is there already.
function install(folder, pkg, version) {
  const manifest = path.join(folder, "node_modules", pkg, "package.json");
  if (fs.existsSync(manifest) && JSON.parse(fs.readFileSync(manifest, "utf8")).version === version) return;
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(path.join(folder, "package.json"), JSON.stringify({ name: "searcheval-pkg", private: true }));
  const r = spawnSync("npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--save-exact", `${pkg}@${version}`], { cwd: folder, stdio: ["ignore", "inherit", "inherit"] });
  if (r.status !== 0) throw new Error(`npm install ${pkg}@${version} failed`);
  const got = JSON.parse(fs.readFileSync(manifest, "utf8")).version;
  if (got !== version) throw new Error(`${pkg}: installed ${got}, want ${version}`);
}

function withTimeout(p, ms, what) {
  let t;
  return Promise.race([p, new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`${what}: no answer in ${ms} ms`)), ms); })]).finally(() => clearTimeout(t));
}

async function record(s, sdk, date) {
  const folder = path.join(PKGS, s.server);
  install(folder, s.pkg, s.version);
  const main = path.join(folder, "node_modules", s.pkg, s.bin);
  const args = typeof s.args === "function" ? s.args() : s.args || [];
  const extra = typeof s.env === "function" ? s.env() : s.env || {};
  const env = { PATH: process.env.PATH, HOME: dir("home-" + s.server), NODE_ENV: "production", ...extra };
  const node = typeof s.node === "function" ? s.node() : [];
  const transport = new sdk.StdioClientTransport({ command: process.execPath, args: [...node, main, ...args], env, cwd: dir("cwd-" + s.server), stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (b) => { stderr += b; });
  const client = new sdk.Client({ name: "searcheval-record", version: "1.0.0" });
  try {
    await withTimeout(client.connect(transport), TIMEOUT_MS, `${s.server}: initialize`);
    const tools = [];
    let cursor;
    do {
      // A raw request with a schema that accepts any object: the answer as
      // the server sent it, also when it breaks the SDK's own schema (the
      // gitlab server's input schemas have no "type": "object").
      const page = await withTimeout(client.request({ method: "tools/list", params: cursor ? { cursor } : {} }, sdk.anyObject), TIMEOUT_MS, `${s.server}: tools/list`);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const out = {
      server: s.server,
      package: s.pkg,
      version: s.version,
      recorded: date,
      tools: tools.map((t) => ({ name: t.name, ...(t.title ? { title: t.title } : {}), description: t.description ?? "", inputSchema: t.inputSchema })),
    };
    fs.mkdirSync(path.join(HERE, "servers"), { recursive: true });
    fs.writeFileSync(path.join(HERE, "servers", `${s.server}.json`), JSON.stringify(out, null, 2) + "\n");
    console.log(`${s.server}\t${s.pkg}@${s.version}\t${tools.length} tools`);
    return tools.length;
  } catch (err) {
    console.error(`${s.server}: ${err.message}\n${stderr.slice(-2000)}`);
    return -1;
  } finally {
    await client.close().catch(() => {});
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const sdkFolder = path.join(PKGS, "_sdk");
  install(sdkFolder, "@modelcontextprotocol/sdk", SDK_VERSION);
  const esm = path.join(sdkFolder, "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "client");
  const sdk = {
    ...(await import(pathToFileURL(path.join(esm, "index.js")))),
    ...(await import(pathToFileURL(path.join(esm, "stdio.js")))),
  };
  const { z } = await import(pathToFileURL(path.join(sdkFolder, "node_modules", "zod", "index.js")));
  sdk.anyObject = z.looseObject({});
  let total = 0;
  let failed = 0;
  for (const s of SERVERS) {
    if (o.only && !o.only.has(s.server)) continue;
    const n = await record(s, sdk, o.date);
    if (n < 0) failed++;
    else total += n;
  }
  console.log(`${total} tools recorded, ${failed} servers failed`);
  fs.rmSync(SCRATCH, { recursive: true, force: true });
  process.exit(failed ? 1 : 0);
}

await main();
