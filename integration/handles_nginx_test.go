//go:build integration

package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// startNginxRoundRobin runs nginx with testdata/nginx-roundrobin.conf in
// front of the replicas rs, every request to the next one, and returns its
// /mcp URL.
func startNginxRoundRobin(t *testing.T, rs ...*httpBridge) string {
	t.Helper()
	var servers strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&servers, "server %s; ", hostPort(r.url))
	}
	return runNginx(t, "testdata/nginx-roundrobin.conf", "{{SERVERS}}", servers.String())
}

// tsHandles is the line integration/node/handles.mjs prints.
type tsHandles struct {
	SDK             string   `json:"sdk"`
	ProtocolVersion string   `json:"protocolVersion"`
	SessionID       string   `json:"sessionId"`
	HandlePrefix    string   `json:"handlePrefix"`
	Handle          string   `json:"handle"`
	HandleLine      bool     `json:"handleLine"`
	First           string   `json:"first"`
	Outputs         []string `json:"outputs"`
}

// runHandlesTS runs handles.mjs with the TypeScript SDK sdk ("v2": the
// 2.x client on 2026-07-28 and a handle; "v1": the 1.x client on a
// 2025-11-25 session) against url with token: x = 41, then n calls of
// x += 1.
func runHandlesTS(t *testing.T, sdk, url, token string, n int) tsHandles {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(nodeDir(t), "handles.mjs"), sdk, url, strconv.Itoa(n))
	cmd.Env = append(envWithout("MCP_TOKEN"), "MCP_TOKEN="+token)
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("handles.mjs %s %s: %v\nstderr:\n%s", sdk, url, err, stderr.String())
	}
	var out tsHandles
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("handles.mjs output: %v\n%s", err, stdout.String())
	}
	return out
}

// counting returns the outputs of n calls of x += 1 after x = 41.
func counting(n int) []string {
	var want []string
	for i := range n {
		want = append(want, strconv.Itoa(42+i))
	}
	return want
}

// handleSeen returns the replicas of rs (by name) that minted the handle h
// and those that resumed it. The lines are told apart by the sandbox's
// container (id=, its first 12 digits): the handle's redacted form in the
// log (its first 10 characters) is the same for every handle minted under
// one key within about 12 days.
func handleSeen(t *testing.T, rs map[string]*httpBridge, key, token, h string) (minted, resumed []string) {
	t.Helper()
	keys, err := handle.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := keys.Check(h, token)
	if err != nil || len(sb.Ref) < 12 {
		t.Fatalf("handle %s: %v (sandbox %q)", handle.Redact(h), err, sb.Ref)
	}
	for name, r := range rs {
		for line := range strings.Lines(r.log.String()) {
			if !strings.Contains(line, " id="+sb.Ref[:12]) {
				continue
			}
			switch {
			case strings.Contains(line, `msg="minted a sandbox handle"`):
				minted = append(minted, name)
			case strings.Contains(line, `msg="resuming a sandbox handle"`):
				resumed = append(resumed, name)
			}
		}
	}
	slices.Sort(minted)
	slices.Sort(resumed)
	return minted, resumed
}

// checkSpread fails the test unless one replica of behind minted the
// handle h and every other one of behind resumed it, and no replica of rs
// outside behind saw it: the calls reached every replica behind the proxy.
func checkSpread(t *testing.T, rs map[string]*httpBridge, behind []string, key, token, h string) {
	t.Helper()
	minted, resumed := handleSeen(t, rs, key, token, h)
	if len(minted) != 1 || !slices.Contains(behind, minted[0]) {
		t.Fatalf("handle minted on %v, want one of %v", minted, behind)
	}
	want := slices.DeleteFunc(slices.Clone(behind), func(n string) bool { return n == minted[0] })
	if !slices.Equal(resumed, want) {
		t.Fatalf("handle minted on %s, resumed on %v; want %v (round robin over %v)", minted[0], resumed, want, behind)
	}
}

// TestHandlesBehindNginx runs three replicas sharing MCP_BRIDGE_HANDLE_KEY
// behind nginx with plain round robin (testdata/nginx-roundrobin.conf, no
// affinity): over two and over three of them, the TypeScript SDK v2 client
// and the go-sdk client, both on protocol 2026-07-28, keep a sandbox's
// state across calls that reach every replica; the TypeScript SDK 1.x
// client keeps its state on a 2025-11-25 session of the same /mcp; and the
// session-prefix configuration SCALING.md shows (testdata/nginx-replicas.conf)
// serves both kinds of client.
func TestHandlesBehindNginx(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		key, token := rand.Text()+rand.Text(), rand.Text()
		rs := map[string]*httpBridge{}
		for _, name := range []string{"r1", "r2", "r3"} {
			rs[name] = startHTTPBridge(t, e, replicaEnv(key, token, name))
		}
		removeResumable(t, e, rs["r1"], rs["r2"], rs["r3"])
		const calls = 6
		for _, behind := range [][]string{{"r1", "r2"}, {"r1", "r2", "r3"}} {
			var up []*httpBridge
			for _, name := range behind {
				up = append(up, rs[name])
			}
			proxy := startNginxRoundRobin(t, up...)

			ts := runHandlesTS(t, "v2", proxy, token, calls)
			if ts.ProtocolVersion != "2026-07-28" || ts.SessionID != "" || ts.HandlePrefix != "sb1_" || !ts.HandleLine || ts.First != "set" {
				t.Fatalf("TypeScript v2 through nginx over %v: %+v", behind, ts)
			}
			if !slices.Equal(ts.Outputs, counting(calls)) {
				t.Fatalf("TypeScript v2 through nginx over %v printed %q, want %q", behind, ts.Outputs, counting(calls))
			}
			checkSpread(t, rs, behind, key, token, ts.Handle)

			cs := rs["r1"].dialStateless(t, proxy)
			text, isErr, h := runIn(t, cs, "", "x = 41\nprint('set')", 30)
			if isErr || !strings.HasPrefix(h, "sb1_") || !strings.HasSuffix(text, "set") {
				t.Fatalf("go-sdk through nginx over %v, first call: %v %q (handle %q)", behind, isErr, text, h)
			}
			var outs []string
			for range calls {
				text, isErr, again := runIn(t, cs, h, "x += 1\nprint(x)", 30)
				if isErr || again != "" {
					t.Fatalf("go-sdk through nginx over %v, after %q: %v %q", behind, outs, isErr, text)
				}
				outs = append(outs, text)
			}
			if !slices.Equal(outs, counting(calls)) {
				t.Fatalf("go-sdk through nginx over %v printed %q, want %q", behind, outs, counting(calls))
			}
			checkSpread(t, rs, behind, key, token, h)
		}

		// A 2025-11-25 client on the same /mcp of one replica: its
		// session keeps the state, no handle.
		old := runHandlesTS(t, "v1", rs["r3"].url, token, calls)
		if old.ProtocolVersion != "2025-11-25" || !strings.HasPrefix(old.SessionID, "r3.") || old.HandlePrefix != "" || old.First != "set" ||
			!slices.Equal(old.Outputs, counting(calls)) {
			t.Fatalf("TypeScript 1.x on r3: %+v", old)
		}

		// The session-prefix configuration serves both: 2025-11-25
		// sessions by their ID's prefix, 2026-07-28 requests (no
		// Mcp-Session-Id) through its default upstream.
		both := startNginx(t, hostPort(rs["r1"].url), hostPort(rs["r2"].url))
		ts := runHandlesTS(t, "v2", both, token, calls)
		if ts.ProtocolVersion != "2026-07-28" || ts.HandlePrefix != "sb1_" || !slices.Equal(ts.Outputs, counting(calls)) {
			t.Fatalf("TypeScript v2 through the session-prefix nginx: %+v", ts)
		}
		minted, resumed := handleSeen(t, rs, key, token, ts.Handle)
		t.Logf("through the session-prefix nginx (random for requests without a session): minted on %v, resumed on %v", minted, resumed)
		old = runHandlesTS(t, "v1", both, token, calls)
		if r, _, _ := strings.Cut(old.SessionID, "."); old.ProtocolVersion != "2025-11-25" || (r != "r1" && r != "r2") ||
			!slices.Equal(old.Outputs, counting(calls)) {
			t.Fatalf("TypeScript 1.x through the session-prefix nginx: %+v", old)
		}
	})
}
