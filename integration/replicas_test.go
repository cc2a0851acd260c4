//go:build integration

package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startNginx runs nginx with testdata/nginx-replicas.conf in front of the
// replicas r1 and r2 (host:port each) and returns its /mcp URL.
func startNginx(t *testing.T, r1, r2 string) string {
	t.Helper()
	return runNginx(t, "testdata/nginx-replicas.conf", "{{R1}}", r1, "{{R2}}", r2)
}

// runNginx runs nginx with the configuration file tmpl, its {{PREFIX}} and
// {{LISTEN}} filled in and each of the placeholder, value pairs in fill
// replaced, until the end of the test, and returns its /mcp URL.
func runNginx(t *testing.T, tmpl string, fill ...string) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		t.Fatalf("nginx is needed (scripts/provision installs nginx-light): %v", err)
	}
	text, err := os.ReadFile(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	listen := freeLoopbackAddr(t)
	dir := t.TempDir()
	conf := strings.NewReplacer(append([]string{"{{PREFIX}}", dir, "{{LISTEN}}", listen}, fill...)...).Replace(string(text))
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx output:\n%s\nerror.log:\n%s", out.String(), log)
		}
	})
	waitFor(t, 10*time.Second, "nginx to listen on "+listen, func() bool {
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx exited: %s\n%s", out.String(), log)
		default:
		}
		c, err := net.Dial("tcp", listen)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + listen + "/mcp"
}

// freeLoopbackAddr returns a loopback host:port free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// hostPort returns the host:port of an http://host:port/mcp URL.
func hostPort(url string) string {
	return strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
}

// TestReplicasBehindNginx runs two replicas of `serve -http` behind the
// nginx configuration SCALING.md shows: sessions are spread over both,
// each session's requests reach the replica that holds its sandbox, and
// when one replica stops, the other's sessions go on and a client that
// starts a new session lands on the one left.
func TestReplicasBehindNginx(t *testing.T) {
	const token = "0123456789abcdef-replicas"
	e := connect(t, engineNames()[0])
	t.Parallel()
	env := func(name string) httpOpts {
		return httpOpts{env: []string{"MCP_BRIDGE_HTTP_TOKEN=" + token, "MCP_BRIDGE_POOL_SIZE=0", "MCP_BRIDGE_HTTP_REPLICA=" + name}}
	}
	replicas := map[string]*httpBridge{"r1": startHTTPBridge(t, e, env("r1")), "r2": startHTTPBridge(t, e, env("r2"))}
	proxy := startNginx(t, hostPort(replicas["r1"].url), hostPort(replicas["r2"].url))
	dial := func() *mcp.ClientSession {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tr := &mcp.StreamableClientTransport{Endpoint: proxy, HTTPClient: replicas["r1"].httpClient(token)}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "integration-replicas", Version: "1"}, nil).Connect(ctx, tr, sessions2025)
		if err != nil {
			t.Fatalf("connecting through nginx: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	replicaOf := func(cs *mcp.ClientSession) string {
		name, _, ok := strings.Cut(cs.ID(), ".")
		if !ok || replicas[name] == nil {
			t.Fatalf("session ID %q names no replica", cs.ID())
		}
		return name
	}

	// New sessions go to a replica at random: dial until each has two.
	var clients []*mcp.ClientSession
	per := map[string]int{}
	for dials := 0; per["r1"] < 2 || per["r2"] < 2; dials++ {
		if dials == 40 {
			t.Fatalf("40 sessions through nginx, on replicas %v: not spread", per)
		}
		cs := dial()
		r := replicaOf(cs)
		if per[r] == 2 {
			cs.Close()
			continue
		}
		per[r]++
		i := len(clients)
		clients = append(clients, cs)
		host, isErr := runPython(t, cs, map[string]any{"code": fmt.Sprintf("import socket\nmine = %d\nprint(socket.gethostname())", i)})
		if isErr || !replicas[r].has(t, host) {
			t.Fatalf("client %d (session %s): sandbox %q is not a container of replica %s", i, cs.ID(), host, r)
		}
	}
	for i, cs := range clients {
		if text, isErr := runPython(t, cs, map[string]any{"code": "print(mine)"}); isErr || text != fmt.Sprint(i) {
			t.Fatalf("client %d's state through nginx: %q", i, text)
		}
	}

	replicas["r1"].cleanup() // SIGTERM: drains, removes its containers, exits 0
	for i, cs := range clients {
		text, isErr := func() (string, bool) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(mine)"}})
			if err != nil {
				return err.Error(), true
			}
			return res.Content[0].(*mcp.TextContent).Text, res.IsError
		}()
		switch replicaOf(cs) {
		case "r2":
			if isErr || text != fmt.Sprint(i) {
				t.Errorf("client %d on r2 after r1 stopped: %q", i, text)
			}
		case "r1":
			if !isErr {
				t.Errorf("client %d on the stopped r1 got an answer: %q", i, text)
			}
		}
	}
	for range 2 {
		cs := dial()
		if r := replicaOf(cs); r != "r2" {
			t.Fatalf("a new session after r1 stopped is on %s", r)
		}
		if text, isErr := runPython(t, cs, map[string]any{"code": "print('on r2')"}); isErr || text != "on r2" {
			t.Fatalf("new session on r2: %q", text)
		}
	}
}
