//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// Shape of TestHygieneOverHTTP.
const (
	hygieneSessions = 24
	hygieneIdleConn = 1000
)

// TestHygieneOverHTTP runs the bridge's HTTP handler in this process on
// each engine, with a warm pool, through: 1,000 idle TCP connections,
// hygieneSessions sessions at once whose calls race two at a time, are
// cancelled mid-call (the client's request goes away) or run in order,
// sessions ended with DELETE and requests after it, sessions whose
// client vanishes (ended by the idle timeout), and a shutdown with a call
// in flight. Then no container, goroutine or file descriptor of the run
// may remain. The engines run one after the other: goroutines are counted
// process-wide.
func TestHygieneOverHTTP(t *testing.T) {
	for _, name := range engineNames() {
		t.Run(name, func(t *testing.T) {
			e := connect(t, name)
			list(t, e)
			if n := ownContainers(t, e); n != 0 {
				t.Fatalf("%d containers of this process before the test", n)
			}
			fds := openFDs(t)
			ignore := goleak.IgnoreCurrent()

			opts := settings(t).Bridge
			opts.Registry = discovery.NewRegistry(discovery.Options{Home: t.TempDir(), Cwd: t.TempDir()})
			opts.Logger, opts.PoolSize = testLogger(), 2
			br := mcpbridge.New(e, &opts)
			srv := httptest.NewServer(br.HTTPHandler(&mcpbridge.HTTPOptions{MaxSessions: 64, SessionIdleTimeout: 2 * time.Second}))
			url := srv.URL + mcpbridge.HTTPPath

			// 1,000 idle connections, held, then dropped.
			var conns []net.Conn
			for range hygieneIdleConn {
				c, err := net.Dial("tcp", srv.Listener.Addr().String())
				if err != nil {
					t.Fatalf("idle connection %d: %v", len(conns), err)
				}
				conns = append(conns, c)
			}

			transport := &http.Transport{MaxIdleConnsPerHost: 4}
			dial := func() *mcp.ClientSession {
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "hygiene", Version: "1"}, nil).Connect(context.Background(),
					&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: transport}}, sessions2025)
				if err != nil {
					t.Errorf("connecting: %v", err)
					return nil
				}
				return cs
			}
			call := func(ctx context.Context, cs *mcp.ClientSession, code string) (string, error) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
				if err != nil {
					return "", err
				}
				text := res.Content[0].(*mcp.TextContent).Text
				if res.IsError {
					return text, fmt.Errorf("error result: %s", text)
				}
				return text, nil
			}
			var wg sync.WaitGroup
			for i := range hygieneSessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cs := dial()
					if cs == nil {
						return
					}
					ctx := context.Background()
					if _, err := call(ctx, cs, fmt.Sprintf("n = %d", i*100)); err != nil {
						t.Errorf("session %d: %v", i, err)
						return
					}
					switch i % 4 {
					case 0: // two calls race on the session: both run, one after the other
						var rw sync.WaitGroup
						for range 2 {
							rw.Add(1)
							go func() {
								defer rw.Done()
								if _, err := call(ctx, cs, "n += 1"); err != nil {
									t.Errorf("session %d, racing call: %v", i, err)
								}
							}()
						}
						rw.Wait()
						if text, err := call(ctx, cs, "print(n)"); err != nil || text != fmt.Sprint(i*100+2) {
							t.Errorf("session %d after two racing calls: %q %v", i, text, err)
						}
					case 1: // a call whose client goes away mid-call
						cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
						call(cctx, cs, "import time\nn += 1\ntime.sleep(30)")
						cancel()
						if text, err := call(ctx, cs, "print(n)"); err != nil || text != fmt.Sprint(i*100+1) {
							t.Errorf("session %d after a call cancelled mid-call: %q %v", i, text, err)
						}
					case 2: // the client goes quiet: the idle timeout ends the session
						// Looked at without a request that would start the
						// timeout again, until it ended, however late.
						id := cs.ID()
						for deadline := time.Now().Add(time.Minute); !sessionGone(url, id); time.Sleep(100 * time.Millisecond) {
							if time.Now().After(deadline) {
								t.Errorf("session %d: still there a minute into a 2 s idle timeout", i)
								break
							}
						}
						if code := pingStatus(url, id); code != http.StatusNotFound {
							t.Errorf("session %d: a request after the idle timeout: %d, want 404", i, code)
						}
						cs.Close() // the client's own goroutines
						return
					default:
						for range 3 {
							call(ctx, cs, "n += 1")
						}
					}
					id := cs.ID()
					cs.Close() // DELETE
					if code := pingStatus(url, id); code != http.StatusNotFound {
						t.Errorf("session %d: a request after DELETE: %d, want 404", i, code)
					}
				}()
			}
			wg.Wait()
			for _, c := range conns {
				c.Close()
			}

			// A call in flight at shutdown is interrupted.
			last := dial()
			done := make(chan error, 1)
			go func() {
				_, err := call(context.Background(), last, "import time\ntime.sleep(60)")
				done <- err
			}()
			time.Sleep(500 * time.Millisecond)
			br.CloseSessions()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Error("a call in flight at shutdown still ran 20 s later")
			}
			last.Close()
			srv.Close()
			br.Close()
			transport.CloseIdleConnections()
			http.DefaultClient.CloseIdleConnections()

			waitFor(t, 30*time.Second, "every container removed", func() bool { return ownContainers(t, e) == 0 })
			goleak.VerifyNone(t, ignore,
				goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
				goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
			if now := openFDs(t); now > fds+2 {
				t.Errorf("%d file descriptors open after the run, %d before: %s", now, fds, fdKinds())
			}
			if t.Failed() {
				return
			}
			t.Logf("%d sessions, %d idle connections: no container, goroutine or descriptor left", hygieneSessions, hygieneIdleConn)
		})
	}
}

// sessionGone reports whether the session id has ended: a GET of its
// stream, which unlike a POST does not start its idle timeout again,
// answers 404 then (409 while its client holds the stream, or the stream,
// closed at once).
func sessionGone(url, id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusNotFound
}

// pingStatus returns the HTTP status of a ping on session id, or 0.
func pingStatus(url, id string) int {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
