package httpserve

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRequests: a request kept is named in its header; a call tied to it
// ends when it does; whether it had a session outlives it; a request not
// over HTTP, or one whose key is unknown, is neither tied nor stateless.
func TestRequests(t *testing.T) {
	var rs Requests
	for _, stateless := range []bool{false, true} {
		rctx, endRequest := context.WithCancel(context.Background())
		r := httptest.NewRequest(http.MethodPost, Path, nil).WithContext(rctx)
		end := rs.begin(r, stateless)
		extra := &mcp.RequestExtra{Header: r.Header}
		if got := Stateless(extra); got != stateless {
			t.Errorf("Stateless = %v, want %v", got, stateless)
		}
		ctx, stop := rs.Tie(context.Background(), extra)
		endRequest()
		<-ctx.Done() // the request ended: so does the call's context
		stop()
		end()
		if got := Stateless(extra); got != stateless {
			t.Errorf("Stateless after the request = %v, want %v", got, stateless)
		}
		ctx, stop = rs.Tie(context.Background(), extra)
		if ctx.Err() != nil || ctx.Done() != nil {
			t.Errorf("a request no longer in flight tied the call")
		}
		stop()
	}
	for _, extra := range []*mcp.RequestExtra{nil, {}, {Header: http.Header{requestHeader: {"999"}}}} {
		if Stateless(extra) {
			t.Errorf("Stateless(%+v) = true", extra)
		}
		ctx, stop := rs.Tie(context.Background(), extra)
		if ctx.Done() != nil {
			t.Errorf("Tie(%+v) tied the call", extra)
		}
		stop()
	}
}

// TestRequestHeaderFromClient: a client that sends its own
// X-Mcp-Bridge-Request, naming another client's request in flight (as
// it is, or marked stateless), learns nothing of that request: the
// handler names each request itself, so the client's call is neither
// tied to the other request's end nor served as stateless when it has
// an MCP session. A client on the protocol without sessions, forging the
// header on every request, is no better off.
func TestRequestHeaderFromClient(t *testing.T) {
	var rs Requests
	type seen struct {
		key       string
		stateless bool
		tied      context.Context
	}
	held := make(chan string, 1)        // the key of the victim's request
	holdEnded := make(chan struct{}, 1) // its call saw its request end
	probed := make(chan seen, 1)
	proceed := make(chan struct{}, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "hold"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		tied, stop := rs.Tie(ctx, req.Extra)
		defer stop()
		held <- keyOf(req.Extra)
		<-tied.Done() // its client goes away
		holdEnded <- struct{}{}
		return &mcp.CallToolResult{}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "probe"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		tied, stop := rs.Tie(ctx, req.Extra)
		defer stop()
		probed <- seen{keyOf(req.Extra), Stateless(req.Extra), tied}
		<-proceed // the victim's request ends meanwhile
		return &mcp.CallToolResult{}, nil, nil
	})
	srv := httptest.NewServer(NewHandler(Config{Server: server, Bridge: stubBridge{server}, Requests: &rs,
		Health: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), Logger: slog.New(slog.DiscardHandler)}, nil))
	defer srv.Close()
	// connect opens a client session on protocol version, sending forged
	// as requestHeader on each request unless it is "".
	connect := func(version, forged string) *mcp.ClientSession {
		t.Helper()
		hc := srv.Client()
		if forged != "" {
			hc = &http.Client{Transport: forgingTransport{hc.Transport, forged}}
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + Path, HTTPClient: hc,
			MaxRetries: -1, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("connecting: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	// post posts a call of tool in session (an Mcp-Session-Id), sending
	// forged as requestHeader unless it is "", until ctx or the answer
	// ends.
	post := func(ctx context.Context, session, tool, forged string) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+Path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", sessionsProtocol)
			req.Header.Set("Mcp-Session-Id", session)
			if forged != "" {
				req.Header.Set(requestHeader, forged)
			}
			if resp, err := srv.Client().Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		return done
	}
	victim := connect(sessionsProtocol, "").ID()
	attacker := connect(sessionsProtocol, "").ID()
	if victim == "" || attacker == "" {
		t.Fatalf("no MCP session on protocol %s", sessionsProtocol)
	}
	for _, tc := range []struct {
		name      string
		mark      string // added to the victim's key
		stateless bool   // the attacker is on the protocol without sessions
	}{
		{"in a session", "", false},
		{"in a session, marked stateless", statelessKey, false},
		{"without a session", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			victimDone := post(ctx, victim, "hold", "")
			key := wait(t, "the victim's call", held)
			forged := key + tc.mark
			var attackerDone <-chan struct{}
			if tc.stateless {
				cs := connect("", forged)
				done := make(chan struct{})
				go func() {
					defer close(done)
					cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{}})
				}()
				attackerDone = done
			} else {
				attackerDone = post(context.Background(), attacker, "probe", forged)
			}
			got := wait(t, "the attacker's call", probed)
			cancel() // the victim's request ends
			wait(t, "the victim's call to see its request end", holdEnded)
			wait(t, "the victim's request to end", victimDone)
			if got.key == "" || got.key == key || got.key == forged {
				t.Errorf("sending %s: %q, the call's request is named %q", requestHeader, forged, got.key)
			}
			if got.stateless != tc.stateless {
				t.Errorf("sending %s: %q, Stateless = %v, want %v", requestHeader, forged, got.stateless, tc.stateless)
			}
			select {
			case <-got.tied.Done(): // context.AfterFunc cancels it in a goroutine of its own
				t.Errorf("sending %s: %q, the call ended with another client's request", requestHeader, forged)
			case <-time.After(100 * time.Millisecond):
			}
			proceed <- struct{}{}
			wait(t, "the attacker's call to end", attackerDone)
		})
	}
}

// sessionsProtocol is a protocol version with MCP sessions.
const sessionsProtocol = "2025-11-25"

// A forgingTransport is an HTTP transport that sends forged as
// requestHeader on every request.
type forgingTransport struct {
	base   http.RoundTripper
	forged string
}

func (f forgingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(requestHeader, f.forged)
	return f.base.RoundTrip(r)
}

// wait returns what ch gives, failing t after a while.
func wait[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// A stubBridge is the bridge of the MCP server it wraps, with no calls
// to halt and no tasks.
type stubBridge struct{ server *mcp.Server }

func (b stubBridge) Sessions() int {
	n := 0
	for range b.server.Sessions() {
		n++
	}
	return n
}

func (stubBridge) HaltCalls(string) {}

func (stubBridge) ListenTasks(http.ResponseWriter, *http.Request, []byte) bool { return false }

// idleBridge is a Bridge without sessions, calls or tasks.
type idleBridge struct{}

func (idleBridge) Sessions() int                                               { return 0 }
func (idleBridge) HaltCalls(string)                                            {}
func (idleBridge) ListenTasks(http.ResponseWriter, *http.Request, []byte) bool { return false }

// TestHandlerZeroConfig: a handler made without a Requests registry or a
// logger (their zero values documented as defaults) serves a request
// that registers itself, and a refusal that logs, without a panic.
func TestHandlerZeroConfig(t *testing.T) {
	h := NewHandler(Config{Server: mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), Bridge: idleBridge{}}, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	r := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
	r.Host = "127.0.0.1"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	r = httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
	r.Host = "evil.example"
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code/100 != 4 {
		t.Fatalf("a request for another host: %d, want a refusal", w.Code)
	}
}
