package mcpbridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// An httpBridge is a bridge on a tracking local engine, served by an
// httptest server through Bridge.HTTPHandler.
type httpBridge struct {
	b   *Bridge
	eng *trackingEngine
	srv *httptest.Server
	url string
}

// serveBridge serves a bridge with opts and hopts, over TLS when tls is set.
func serveBridge(t *testing.T, opts Options, hopts HTTPOptions, tls bool) *httpBridge {
	t.Helper()
	hb := &httpBridge{eng: newTrackingEngine(t)}
	if opts.Registry == nil {
		opts.Registry = discovery.NewRegistry(discovery.Options{Home: t.TempDir(), Cwd: t.TempDir()})
	}
	hb.b = New(hb.eng, &opts)
	t.Cleanup(func() { hb.b.Close() })
	handler := hb.b.HTTPHandler(&hopts)
	if tls {
		hb.srv = httptest.NewTLSServer(handler)
	} else {
		hb.srv = httptest.NewServer(handler)
	}
	t.Cleanup(hb.srv.Close)
	t.Cleanup(hb.b.CloseSessions) // before the server waits for its streams
	hb.url = hb.srv.URL + HTTPPath
	return hb
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

// connect opens an MCP session (protocol 2025-11-25) with a go-sdk
// client, whose requests carry token (when set) as a bearer token.
func (hb *httpBridge) connect(t *testing.T, token string) (*mcp.ClientSession, error) {
	t.Helper()
	return hb.connectVersion(t, token, sessionsProtocol)
}

// sessionsProtocol is the last protocol version with MCP sessions.
const sessionsProtocol = "2025-11-25"

// connectVersion connects a go-sdk client asking for protocol version
// (the go-sdk's newest when ""), its requests carrying token when set.
func (hb *httpBridge) connectVersion(t *testing.T, token, version string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := hb.srv.Client()
	if token != "" {
		hc = &http.Client{Transport: headerTransport{hc.Transport, "Authorization", "Bearer " + token}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hb.url, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// mustConnect is connect without a token, failing the test on error.
func (hb *httpBridge) mustConnect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	cs, err := hb.connect(t, "")
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// do sends a raw MCP request: method to the bridge's URL with body and
// headers (a "Host" entry sets the Host), returning the response with its
// whole body.
func (hb *httpBridge) do(t *testing.T, ctx context.Context, method, url string, body io.Reader, headers map[string]string) (*http.Response, string) {
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
	resp, err := hb.srv.Client().Do(req)
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
func (hb *httpBridge) onlySession(t *testing.T) *clientSession {
	t.Helper()
	hb.b.mu.Lock()
	defer hb.b.mu.Unlock()
	if len(hb.b.sessions) != 1 {
		t.Fatalf("%d client sessions, want 1", len(hb.b.sessions))
	}
	for _, cs := range hb.b.sessions {
		return cs
	}
	return nil
}

// clientSessions returns how many client sessions the bridge keeps.
func (hb *httpBridge) clientSessions() int {
	hb.b.mu.Lock()
	defer hb.b.mu.Unlock()
	return len(hb.b.sessions)
}

// waitEnded waits until the bridge serves no MCP session, keeps no client
// session and no sandbox runs.
func (hb *httpBridge) waitEnded(t *testing.T, what string) {
	t.Helper()
	waitFor(t, what, func() bool {
		_, live := hb.eng.counts()
		return hb.b.sessionCount() == 0 && hb.clientSessions() == 0 && live == 0
	})
}

// callText calls run_python with code and returns its text and IsError.
func callText(t *testing.T, cs *mcp.ClientSession, code string) (string, bool) {
	t.Helper()
	res, text, _ := call(t, cs, map[string]any{"code": code})
	return text, res.IsError
}
