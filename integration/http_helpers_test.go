//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// An httpBridge is a `serve -http 127.0.0.1:0` process of the built binary.
type httpBridge struct {
	t     testing.TB
	e     testEngine
	cmd   *exec.Cmd
	pid   int
	url   string // http(s)://127.0.0.1:PORT/mcp
	token string // MCP_BRIDGE_HTTP_TOKEN, when set
	base  *http.Transport
	log   *lockedBuffer
	done  chan struct{} // closed when the process has exited
	err   error         // its Wait error, once done
	// resumable says it shares a handle key: its handles' sandboxes
	// outlive it, for the other replicas.
	resumable bool

	cleaned sync.Once
}

// httpOpts configure an httpBridge: env is added to the process
// environment (later entries win), args to `serve -http 127.0.0.1:0`;
// roots, when set, is what the clients trust (for -tls-cert).
type httpOpts struct {
	env   []string
	args  []string
	roots *x509.CertPool
}

// The variables of `serve` that the tests set per bridge: none leaks in
// from the environment of the test run.
var httpVars = []string{"HOME", "MCP_BRIDGE_RUNTIME", "MCP_BRIDGE_LOG_LEVEL", "MCP_BRIDGE_POOL_SIZE",
	"MCP_BRIDGE_HTTP_TOKEN", "MCP_BRIDGE_HTTP_ALLOWED_HOSTS", "MCP_BRIDGE_HTTP_ALLOWED_ORIGINS",
	"MCP_BRIDGE_MAX_SESSIONS", "MCP_BRIDGE_SESSION_IDLE_TIMEOUT", "MCP_BRIDGE_MAX_QUEUED_CALLS",
	"MCP_SERVERS_CONFIG", "MCP_BRIDGE_STATE_DIR", "MCP_BRIDGE_ENGINES", "MCP_BRIDGE_CONSOLE_TOKEN", "MCP_BRIDGE_AUDIT_LOG"}

var servingURL = regexp.MustCompile(`msg="serving MCP over Streamable HTTP" url=(\S+)`)

// startHTTPBridge starts the binary's HTTP server on engine e and waits
// for the line that says where it listens. At the end of the test it is
// stopped (SIGTERM) unless it has exited, and it must leave no container.
func startHTTPBridge(t testing.TB, e testEngine, o httpOpts) *httpBridge {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve", "-http", "127.0.0.1:0"}, o.args...)...)
	cmd.Env = append(envWithout(httpVars...), "HOME="+t.TempDir(), "MCP_BRIDGE_RUNTIME="+e.Name(), "MCP_BRIDGE_LOG_LEVEL=INFO")
	cmd.Env = append(cmd.Env, o.env...)
	cmd.Dir = t.TempDir() // no ./mcp-servers of the repository
	b := &httpBridge{t: t, e: e, cmd: cmd, log: &lockedBuffer{}, done: make(chan struct{})}
	for _, kv := range o.env {
		if v, ok := strings.CutPrefix(kv, "MCP_BRIDGE_HTTP_TOKEN="); ok {
			b.token = v
		}
		if strings.HasPrefix(kv, "MCP_BRIDGE_HANDLE_KEY=") {
			b.resumable = true
		}
	}
	cmd.Stderr = b.log
	b.base = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: o.roots}, MaxIdleConnsPerHost: 8}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.pid = cmd.Process.Pid
	go func() { b.err = cmd.Wait(); close(b.done) }()
	t.Cleanup(b.cleanup)
	deadline := time.After(30 * time.Second)
	for b.url == "" {
		if m := servingURL.FindStringSubmatch(b.log.String()); m != nil {
			b.url = m[1]
			break
		}
		select {
		case <-b.done:
			t.Fatalf("serve exited before listening: %v", b.err)
		case <-deadline:
			t.Fatal("serve did not say where it listens within 30 s")
		case <-time.After(20 * time.Millisecond):
		}
	}
	return b
}

// cleanup stops the process (SIGTERM) unless it has exited, and fails the
// test if it left a container; it runs once, at the end of the test or
// when called before.
func (b *httpBridge) cleanup() { b.cleaned.Do(b.stopAndCheck) }

func (b *httpBridge) stopAndCheck() {
	t := b.t
	select {
	case <-b.done:
	default:
		b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.done:
		case <-time.After(20 * time.Second):
			t.Errorf("serve (pid %d) did not exit within 20 s of SIGTERM; killing it", b.pid)
			b.cmd.Process.Kill()
			<-b.done
		}
	}
	b.base.CloseIdleConnections()
	// The process removes its containers before it exits; the engine
	// may take a moment to list them gone.
	var left []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		left = left[:0]
		for _, c := range b.containers(t) {
			if b.resumable && c.Labels[engine.LabelResumable] != "" && c.State == "running" {
				continue // left for another replica, on purpose; see removeResumable
			}
			left = append(left, c.ID[:12]+" ("+c.Labels[engine.LabelSession]+", "+c.State+")")
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("containers of serve (pid %d) left after it exited: %v", b.pid, left)
		// A new connection to the engine removes the orphans of dead
		// bridge processes, as the next bridge would.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if fresh, err := openEngine(ctx, b.e.Name(), ""); err == nil {
			fresh.Close()
		}
		cancel()
	}
	if t.Failed() {
		t.Logf("serve stderr (last 16 KiB):\n%s", b.log.tail(16<<10))
	}
}

// containers returns the containers this bridge process owns.
func (b *httpBridge) containers(t testing.TB) []engine.SandboxInfo {
	t.Helper()
	return containersOf(t, b.e, b.pid)
}

// containersOf returns the containers on e that the bridge process pid
// owns.
func containersOf(t testing.TB, e testEngine, pid int) []engine.SandboxInfo {
	t.Helper()
	return sandboxesLabelled(t, e, engine.LabelPID, strconv.Itoa(pid))
}

// sandboxesLabelled returns the sandboxes on e whose label key is value.
func sandboxesLabelled(t testing.TB, e testEngine, key, value string) []engine.SandboxInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all, err := e.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []engine.SandboxInfo
	for _, s := range all {
		if s.Labels[key] == value {
			out = append(out, s)
		}
	}
	return out
}

// has reports whether the container whose ID starts with prefix exists.
func (b *httpBridge) has(t testing.TB, prefix string) bool {
	t.Helper()
	for _, s := range b.containers(t) {
		if strings.HasPrefix(s.ID, prefix) {
			return true
		}
	}
	return false
}

// fds counts the bridge process's open file descriptors.
func (b *httpBridge) fds(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(b.pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// steadyFDs returns the bridge's descriptor count once it has held for
// half a second (connections of earlier requests closing settle).
func (b *httpBridge) steadyFDs(t testing.TB) int {
	t.Helper()
	n, same := b.fds(t), 0
	for deadline := time.Now().Add(10 * time.Second); same < 5 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if m := b.fds(t); m == n {
			same++
		} else {
			n, same = m, 0
		}
	}
	return n
}

// httpClient returns a client of the bridge that sends token as a bearer
// token ("" none) and trusts the bridge's certificate.
func (b *httpBridge) httpClient(token string) *http.Client {
	return &http.Client{Transport: bearer{b.base, token}}
}

type bearer struct {
	base  http.RoundTripper
	token string
}

func (r bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.token != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	return r.base.RoundTrip(req)
}

// sessions2025 asks for protocol 2025-11-25, the last with MCP sessions
// (Mcp-Session-Id); a go-sdk client asks for 2026-07-28 unless told.
var sessions2025 = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

// dial connects a go-sdk client with token over Streamable HTTP, on a
// 2025-11-25 session.
func (b *httpBridge) dial(token string, copts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: b.url, HTTPClient: b.httpClient(token)}
	return mcp.NewClient(&mcp.Implementation{Name: "integration-http", Version: "1"}, copts).Connect(ctx, tr, sessions2025)
}

// session connects a go-sdk client with the bridge's token; it is closed
// (DELETE) at the end of the test.
func (b *httpBridge) session(t testing.TB, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := b.dial(b.token, copts)
	if err != nil {
		t.Fatalf("connecting a client: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// sandboxOf returns the hostname of the session's sandbox, the prefix of
// its container's ID, and checks that the bridge owns that container.
func (b *httpBridge) sandboxOf(t testing.TB, cs *mcp.ClientSession) string {
	t.Helper()
	host, isErr := runPython(t, cs, map[string]any{"code": "import socket\nprint(socket.gethostname())"})
	if isErr || len(host) < 12 {
		t.Fatalf("hostname: %q", host)
	}
	if !b.has(t, host) {
		t.Fatalf("the sandbox's hostname %q is no container of serve (pid %d): %v", host, b.pid, b.containers(t))
	}
	return host
}

// A rawResponse is an HTTP answer, its body read.
type rawResponse struct {
	status int
	header http.Header
	body   string
}

// raw sends one HTTP request to the MCP endpoint with the usual
// Streamable HTTP headers, the bridge's token and session sid (if not "");
// edit changes the request before it goes.
func (b *httpBridge) raw(t testing.TB, method, sid string, body []byte, edit func(*http.Request)) rawResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	if edit != nil {
		edit(req)
	}
	resp, err := (&http.Client{Transport: b.base}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, b.url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return rawResponse{resp.StatusCode, resp.Header, string(data)}
}

// rpc encodes a JSON-RPC message; id 0 makes a notification.
func rpc(id int, method string, params any) []byte {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if id != 0 {
		m["id"] = id
	}
	if params != nil {
		m["params"] = params
	}
	data, _ := json.Marshal(m)
	return data
}

// initializeRequest is a client's first message.
func initializeRequest() []byte {
	return rpc(1, "initialize", map[string]any{"protocolVersion": "2025-06-18",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}})
}

// rawSession opens an MCP session with bare HTTP requests and returns its
// Mcp-Session-Id.
func (b *httpBridge) rawSession(t testing.TB) string {
	t.Helper()
	r := b.raw(t, "POST", "", initializeRequest(), nil)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" || !strings.Contains(r.body, `"serverInfo"`) {
		t.Fatalf("initialize: %d %q (session %q)", r.status, r.body, sid)
	}
	if r := b.raw(t, "POST", sid, rpc(0, "notifications/initialized", nil), nil); r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %q", r.status, r.body)
	}
	return sid
}

// vanishMidCall sends a run_python call of code in session sid that
// prints marker first, reads the response stream until the progress
// notification carrying marker arrives (the call runs), and then drops
// the connection, as a client that crashed or lost its network would. It
// returns the stream's line that carried marker.
func (b *httpBridge) vanishMidCall(t testing.TB, sid, code, marker string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body := rpc(7, "tools/call", map[string]any{"name": "run_python", "arguments": map[string]any{"code": code},
		"_meta": map[string]any{"progressToken": "vanish"}})
	req, _ := http.NewRequestWithContext(ctx, "POST", b.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	own := &http.Transport{TLSClientConfig: b.base.TLSClientConfig}
	defer own.CloseIdleConnections()
	resp, err := (&http.Client{Transport: own}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, marker) {
			cancel() // the connection is closed under the server
			resp.Body.Close()
			return line
		}
	}
	t.Fatalf("the call's stream ended (%v) before its output %q came", sc.Err(), marker)
	return ""
}

// waitFor polls cond every 100 ms until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if time.Since(began) > timeout {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(began)
}

// progressCall makes a run_python call of code with a progress token (so
// that the bridge streams its output as progress notifications).
func progressCall(ctx context.Context, cs *mcp.ClientSession, code string) (*mcp.CallToolResult, error) {
	p := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code, "timeout": 120}}
	p.SetProgressToken("p-" + strconv.FormatInt(time.Now().UnixNano(), 36))
	return cs.CallTool(ctx, p)
}

// progressSignal returns client options whose progress handler closes the
// returned channel when a progress message contains marker.
func progressSignal(marker string) (*mcp.ClientOptions, <-chan struct{}) {
	ch := make(chan struct{})
	var once sync.Once
	return &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		if strings.Contains(r.Params.Message, marker) {
			once.Do(func() { close(ch) })
		}
	}}, ch
}

// selfSignedCert writes a self-signed certificate for 127.0.0.1, ::1 and
// localhost and its key into dir, and returns their paths and a pool that
// trusts it.
func selfSignedCert(t testing.TB, dir string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "mcp-bridge integration"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}

// memoryServers writes, into home's state directory, two entries of the
// npm server-memory: "memory" (an instance per session, the default) and
// "sharedmem" ("shared": true). server-memory keeps its graph in the file
// MEMORY_FILE_PATH and rereads it on every call, so two instances on one
// file would share their data through it; each instance gets a file of its
// own (a shell wrapper makes one per process), so that what one instance
// knows is exactly what was sent to it.
func memoryServers(t testing.TB, home string) {
	t.Helper()
	bin := filepath.Join(nodeDir(t), "node_modules", ".bin", "mcp-server-memory")
	files := t.TempDir()
	wrapper := fmt.Sprintf(`MEMORY_FILE_PATH="$(mktemp -d -p '%s')/memory.jsonl" exec '%s'`, files, bin)
	cfg := map[string]any{"mcpServers": map[string]any{
		"memory":    map[string]any{"command": "/bin/sh", "args": []string{"-c", wrapper}},
		"sharedmem": map[string]any{"command": "/bin/sh", "args": []string{"-c", wrapper}, "shared": true},
	}}
	data, _ := json.Marshal(cfg)
	if err := os.MkdirAll(filepath.Join(home, "MCPs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "MCPs", "servers.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
