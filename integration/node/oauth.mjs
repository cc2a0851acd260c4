// oauth.mjs: the official TypeScript SDK's client (1.x) signs in to a
// bridge served as an OAuth resource server, as each of several people,
// with the authorization code grant and PKCE, and runs their calls.
//
// stdin: {"url": the bridge's /mcp, "clientId", "clientSecret" (a
// pre-registered client), "redirect" (its redirect URI), "users": [{"username",
// "password", "calls": [run_python arguments, ...]}]}.
// stdout: {"probe": {"status", "wwwAuthenticate", "metadata"}, "users":
// [{"results": [{"text", "isError"}], "authorizationUrl", "token"}]}.
//
// The browser is played over HTTP: the provider's login form (zitadel's
// example provider: /login/username, fields id, username, password) is
// submitted, and the redirect to the client's redirect URI is caught
// for its code.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const input = JSON.parse(await new Promise((resolve) => {
  let data = "";
  process.stdin.on("data", (c) => (data += c));
  process.stdin.on("end", () => resolve(data));
}));

// probe is what a client without a token sees: the 401 and the metadata
// its WWW-Authenticate names.
async function probe() {
  const r = await fetch(input.url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "probe", version: "1" } } }),
  });
  const www = r.headers.get("www-authenticate") || "";
  const m = /resource_metadata="([^"]+)"/.exec(www);
  let metadata = null;
  if (m) {
    metadata = await (await fetch(m[1])).json();
  }
  return { status: r.status, wwwAuthenticate: www, metadata };
}

// signIn plays the browser at authorizationUrl for user: the login form,
// then the redirects, until the one to the redirect URI; it returns the
// code.
async function signIn(authorizationUrl, user) {
  let url = authorizationUrl.href;
  for (let hop = 0; hop < 10; hop++) {
    if (url.startsWith(input.redirect)) {
      const code = new URL(url).searchParams.get("code");
      if (!code) throw new Error("no code in " + url);
      return code;
    }
    const u = new URL(url);
    let r;
    if (u.pathname === "/login/username") {
      const form = new URLSearchParams({ id: u.searchParams.get("authRequestID"), username: user.username, password: user.password });
      r = await fetch(u.origin + "/login/username", { method: "POST", body: form, redirect: "manual" });
    } else {
      r = await fetch(url, { redirect: "manual" });
    }
    const next = r.headers.get("location");
    if (!next) throw new Error(`no redirect from ${url}: ${r.status} ${(await r.text()).slice(0, 300)}`);
    url = new URL(next, url).href;
  }
  throw new Error("too many redirects");
}

function provider(user) {
  let tokens, verifier, authorizationUrl;
  return {
    get redirectUrl() { return input.redirect; },
    get clientMetadata() {
      return { redirect_uris: [input.redirect], client_name: "integration", grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "client_secret_post" };
    },
    // client_secret_post: this SDK writes client_secret_basic's
    // credentials without form-encoding them (RFC 6749 §2.3.1), which a
    // client ID that is a URL (the resource's, here) does not survive.
    clientInformation() { return { client_id: input.clientId, client_secret: input.clientSecret, token_endpoint_auth_method: "client_secret_post" }; },
    tokens() { return tokens; },
    saveTokens(t) { tokens = t; },
    redirectToAuthorization(url) { authorizationUrl = url; },
    saveCodeVerifier(v) { verifier = v; },
    codeVerifier() { return verifier; },
    get authorizationUrl() { return authorizationUrl; },
    get accessToken() { return tokens && tokens.access_token; },
    user,
  };
}

async function connect(p) {
  const client = new Client({ name: "oauth-integration", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(input.url), { authProvider: p });
  try {
    await client.connect(transport);
    return client;
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  const code = await signIn(p.authorizationUrl, p.user);
  await transport.finishAuth(code);
  const again = new Client({ name: "oauth-integration", version: "1" });
  await again.connect(new StreamableHTTPClientTransport(new URL(input.url), { authProvider: p }));
  return again;
}

const out = { probe: await probe(), users: [] };
for (const user of input.users) {
  const p = provider(user);
  const client = await connect(p);
  const results = [];
  for (const args of user.calls) {
    const res = await client.callTool({ name: "run_python", arguments: args }, undefined, { timeout: 120000 });
    results.push({ text: res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n"), isError: !!res.isError });
  }
  await client.close();
  out.users.push({ results, authorizationUrl: p.authorizationUrl && p.authorizationUrl.href, token: p.accessToken });
}
process.stdout.write(JSON.stringify(out));
