//go:build integration

package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// forgeLoadedCode rewrites the sandbox's report of its loaded servers to
// name a server no client granted it.
const forgeLoadedCode = `from mcp import runtime
runtime.list_loaded_server_metadata = lambda: [{"name": "everything"}]
print("forged")`

// echoCode calls everything.echo through the runtime, printing the
// answer or the refusal.
const echoCode = `from mcp import runtime
try:
    print(await runtime.call_tool("everything", "echo", {"message": "pwned"}))
except MCPError as e:
    print("refused:", e)`

// grantedAcrossReplicas checks the texts of the four calls of the test,
// in order: the forged handle's on r1 and r2, the granted one's on r1
// and r2.
func grantedAcrossReplicas(t *testing.T, client string, texts []string) {
	t.Helper()
	if len(texts) != 4 {
		t.Fatalf("%s: %d results", client, len(texts))
	}
	if !strings.Contains(texts[0], "forged") {
		t.Fatalf("%s: the forging call: %q", client, texts[0])
	}
	if strings.Contains(texts[1], "pwned") || !strings.Contains(texts[1], "refused: Server 'everything' is not available") {
		t.Errorf("%s: a handle minted without servers called everything.echo after forging its report, on another replica: %q", client, texts[1])
	}
	for i, text := range texts[2:] {
		if !strings.Contains(text, "Echo: pwned") {
			t.Errorf("%s: a granted server through replica %d: %q", client, i+1, text)
		}
	}
}

// TestHandleGrantedServers: a sandbox's code that rewrites its report of
// the servers it loaded gains nothing on the replica that resumes it
// (the servers a client granted are a tagged record the sandbox cannot
// forge), and a server a client granted keeps working after a resume;
// with go-sdk and with the TypeScript SDK v2 client, over 2026-07-28. On
// bb2658b the forged report was believed: r2 granted everything and
// echoed "pwned".
func TestHandleGrantedServers(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		home, _ := npmHome(t)
		key, token := rand.Text()+rand.Text(), rand.Text()
		r1 := startHTTPBridge(t, e, replicaEnv(key, token, "r1", "HOME="+home))
		r2 := startHTTPBridge(t, e, replicaEnv(key, token, "r2", "HOME="+home))
		removeResumable(t, e, r1, r2)

		t.Run("go-sdk", func(t *testing.T) {
			c1, c2 := r1.dialStateless(t, r1.url), r2.dialStateless(t, r2.url)
			var texts []string
			text, _, forged := runIn(t, c1, "", forgeLoadedCode, 60)
			texts = append(texts, text)
			text, _, _ = runIn(t, c2, forged, echoCode, 120)
			texts = append(texts, text)
			text, isErr, granted := runWith(t, c1, map[string]any{"servers": []string{"everything"}, "code": echoCode, "timeout": 120})
			if isErr || granted == "" {
				t.Fatalf("a call granting everything: %v %q", isErr, text)
			}
			texts = append(texts, text)
			text, _, _ = runIn(t, c2, granted, echoCode, 120)
			texts = append(texts, text)
			grantedAcrossReplicas(t, "go-sdk", texts)
		})

		t.Run("typescript-v2", func(t *testing.T) {
			calls := []map[string]any{
				{"url": r1.url, "arguments": map[string]any{"code": forgeLoadedCode, "timeout": 60}, "save": "forged"},
				{"url": r2.url, "arguments": map[string]any{"code": echoCode, "timeout": 120}, "handle": "forged"},
				{"url": r1.url, "arguments": map[string]any{"servers": []string{"everything"}, "code": echoCode, "timeout": 120}, "save": "granted"},
				{"url": r2.url, "arguments": map[string]any{"code": echoCode, "timeout": 120}, "handle": "granted"},
			}
			in, _ := json.Marshal(calls)
			cmd := exec.Command("node", filepath.Join(nodeDir(t), "calls2.mjs"))
			cmd.Env = append(envWithout("MCP_TOKEN"), "MCP_TOKEN="+token)
			cmd.Dir = t.TempDir()
			var stdout, stderr bytes.Buffer
			cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("calls2.mjs: %v\nstderr:\n%s", err, stderr.String())
			}
			var res []struct {
				Text    string `json:"text"`
				IsError bool   `json:"isError"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
				t.Fatalf("calls2.mjs output: %v\n%s", err, stdout.String())
			}
			var texts []string
			for _, r := range res {
				texts = append(texts, r.Text)
			}
			grantedAcrossReplicas(t, "typescript-v2", texts)
		})

		// The replica's log says what it refused: here no record of a
		// grant at all (the forged handle was never granted a server).
		if log := r2.log.String(); !strings.Contains(log, "without a record of their grant") && !strings.Contains(log, "no client granted it") {
			t.Errorf("r2 did not log the forged report")
		}
	})
}
