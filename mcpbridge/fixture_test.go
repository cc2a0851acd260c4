package mcpbridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/enginetest"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/protocol"
)

// fixtureOptions say how newFixture builds a bridge under test, and how
// the fixture's in-memory clients connect to it. The zero value is a
// bridge with default Options and no MCP server configured, on
// enginetest.Local, served over no HTTP, whose in-memory clients have the
// go-sdk's defaults.
type fixtureOptions struct {
	// Engine runs the sandboxes. If nil, enginetest.Local{T: t}. A
	// *trackingEngine is also kept as fixture.eng.
	Engine engine.Engine
	// Options are the bridge's. If Options.Registry is nil, an empty
	// registry in temporary directories is used: no server of the
	// machine's is found.
	Options Options
	// Policy, if set, is the text of the policy file that
	// Options.PolicyFile then names. Zero: no policy file.
	Policy string
	// Audit opens an audit log as Options.Audit (its path:
	// fixture.auditPath), in the policy file's directory. Zero: none.
	Audit bool
	// HTTP, if non-nil, serves Bridge.HTTPHandler(HTTP) on an httptest
	// server (fixture.srv, fixture.url); at the test's end the bridge's
	// MCP sessions are closed before the server.
	HTTP *HTTPOptions
	// TLS serves HTTP over TLS. Zero: plain HTTP.
	TLS bool
	// Client configures each in-memory client: its elicitation, progress
	// and log handlers. Zero: the go-sdk's defaults (no capability
	// declared beyond roots).
	Client mcp.ClientOptions
	// Protocol is the protocol version the in-memory clients ask for.
	// Zero: the go-sdk's newest.
	Protocol string
	// Wrap, if set, wraps the client's end of each in-memory transport
	// (to see the messages). Zero: the transport as it is.
	Wrap func(mcp.Transport) mcp.Transport
}

// A fixture is a bridge under test, closed when the test ends, with what
// the test needs to reach it.
type fixture struct {
	opts fixtureOptions
	b    *Bridge
	eng  *trackingEngine  // the engine, when it is a trackingEngine
	srv  *httptest.Server // when served over HTTP
	url  string           // the MCP endpoint on srv

	auditPath string // the audit log's, with Audit
}

// newFixture builds the bridge fo describes.
func newFixture(t testing.TB, fo fixtureOptions) *fixture {
	t.Helper()
	f := &fixture{opts: fo}
	if fo.Engine == nil {
		fo.Engine = enginetest.Local{T: t}
	}
	f.eng, _ = fo.Engine.(*trackingEngine)
	opts := fo.Options
	if opts.Registry == nil {
		opts.Registry = discovery.NewRegistry(discovery.Options{Home: t.TempDir(), Cwd: t.TempDir()})
	}
	var dir string // of the policy file and the audit log, side by side
	if fo.Policy != "" || fo.Audit {
		dir = t.TempDir()
	}
	if fo.Policy != "" {
		opts.PolicyFile = filepath.Join(dir, "policy.json")
		write(t, opts.PolicyFile, fo.Policy)
	}
	if fo.Audit {
		f.auditPath = filepath.Join(dir, "audit.jsonl")
		alog, err := audit.Open(f.auditPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { alog.Close() })
		opts.Audit = alog
	}
	f.b = New(fo.Engine, &opts)
	t.Cleanup(func() { f.b.Close() })
	if fo.HTTP != nil {
		handler := f.b.HTTPHandler(fo.HTTP)
		if fo.TLS {
			f.srv = httptest.NewTLSServer(handler)
		} else {
			f.srv = httptest.NewServer(handler)
		}
		t.Cleanup(f.srv.Close)
		t.Cleanup(f.b.CloseSessions) // before the server waits for its streams
		f.url = f.srv.URL + HTTPPath
	}
	return f
}

// serve connects the bridge's MCP server to one end of new in-memory
// transports and returns the other end.
func (f *fixture) serve(t testing.TB) mcp.Transport {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := f.b.Server().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	return ct
}

// connectInMemory connects a go-sdk client over in-memory transports,
// with the fixture's Client options and Protocol, through its Wrap. The
// client is closed when the test ends.
func (f *fixture) connectInMemory(t testing.TB) *mcp.ClientSession {
	t.Helper()
	ct := f.serve(t)
	if f.opts.Wrap != nil {
		ct = f.opts.Wrap(ct)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &f.opts.Client).
		Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: f.opts.Protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connectClient runs a bridge with opts on a local-process engine and
// connects an in-memory MCP client to it.
func connectClient(t *testing.T, opts Options) (*mcp.ClientSession, *Bridge) {
	t.Helper()
	f := newFixture(t, fixtureOptions{Options: opts})
	return f.connectInMemory(t), f.b
}

// serveBridge serves a bridge with opts on a tracking local engine over
// HTTP with hopts, over TLS when tls is set.
func serveBridge(t *testing.T, opts Options, hopts HTTPOptions, tls bool) *fixture {
	t.Helper()
	return newFixture(t, fixtureOptions{Engine: newTrackingEngine(t), Options: opts, HTTP: &hopts, TLS: tls})
}

// notes keeps what a client's handler is given, for the test to read.
type notes[T any] struct {
	mu  sync.Mutex
	got []T
}

func (n *notes[T]) add(v T) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, v)
}

// all returns a copy of what was kept so far.
func (n *notes[T]) all() []T {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]T(nil), n.got...)
}

// headerTransport adds a header to every request.
type headerTransport struct {
	base        http.RoundTripper
	name, value string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.base.RoundTrip(r)
}

// connect opens an MCP session (protocol 2025-11-25) over HTTP with a
// go-sdk client, whose requests carry token (when set) as a bearer token.
func (f *fixture) connect(t *testing.T, token string) (*mcp.ClientSession, error) {
	t.Helper()
	return f.connectVersion(t, token, sessionsProtocol)
}

// sessionsProtocol is the last protocol version with MCP sessions.
const sessionsProtocol = "2025-11-25"

// connectVersion connects a go-sdk client over HTTP asking for protocol
// version (the go-sdk's newest when ""), its requests carrying token when
// set.
func (f *fixture) connectVersion(t *testing.T, token, version string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := f.srv.Client()
	if token != "" {
		hc = &http.Client{Transport: headerTransport{hc.Transport, "Authorization", "Bearer " + token}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.url, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// mustConnect is connect without a token, failing the test on error.
func (f *fixture) mustConnect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	cs, err := f.connect(t, "")
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// connectStateless connects a go-sdk client over HTTP on protocol
// 2026-07-28 (no MCP session), with token when set.
func (f *fixture) connectStateless(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := f.connectVersion(t, token, "")
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != protocol.Stateless {
		t.Fatalf("negotiated protocol %s, want %s", v, protocol.Stateless)
	}
	return cs
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// do sends a raw MCP request: method to the bridge's URL with body and
// headers (a "Host" entry sets the Host), returning the response with its
// whole body.
func (f *fixture) do(t *testing.T, ctx context.Context, method, url string, body io.Reader, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// rpcError decodes the JSON-RPC error response body, failing the test when
// it is none.
func rpcError(t *testing.T, resp *http.Response, body string) (code int, msg string) {
	t.Helper()
	var e struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%d response of type %q, want a JSON-RPC error: %q", resp.StatusCode, ct, body)
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.JSONRPC != "2.0" || string(e.ID) != "null" || e.Error.Code == 0 {
		t.Fatalf("%d response %q is not a JSON-RPC error with id null (%v)", resp.StatusCode, body, err)
	}
	return e.Error.Code, e.Error.Message
}

// onlySession returns the bridge's only client session.
func (f *fixture) onlySession(t *testing.T) *clientSession {
	t.Helper()
	f.b.mu.Lock()
	defer f.b.mu.Unlock()
	if len(f.b.sessions) != 1 {
		t.Fatalf("%d client sessions, want 1", len(f.b.sessions))
	}
	for _, cs := range f.b.sessions {
		return cs
	}
	return nil
}

// clientSessions returns how many client sessions the bridge keeps.
func (f *fixture) clientSessions() int {
	f.b.mu.Lock()
	defer f.b.mu.Unlock()
	return len(f.b.sessions)
}

// waitEnded waits until the bridge serves no MCP session, keeps no client
// session and no sandbox runs (on a tracking engine).
func (f *fixture) waitEnded(t *testing.T, what string) {
	t.Helper()
	waitFor(t, what, func() bool {
		_, live := f.eng.counts()
		return f.b.sessionCount() == 0 && f.clientSessions() == 0 && live == 0
	})
}

// callText calls run_python with code and returns its text and IsError.
func callText(t *testing.T, cs *mcp.ClientSession, code string) (string, bool) {
	t.Helper()
	res, text, _ := call(t, cs, map[string]any{"code": code})
	return text, res.IsError
}
