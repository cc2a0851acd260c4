//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// replicaEnv is the environment of a replica sharing key and token.
func replicaEnv(key, token, name string, extra ...string) httpOpts {
	return httpOpts{env: append([]string{"MCP_BRIDGE_HANDLE_KEY=" + key, "MCP_BRIDGE_HTTP_TOKEN=" + token,
		"MCP_BRIDGE_POOL_SIZE=1", "MCP_BRIDGE_HTTP_REPLICA=" + name}, extra...)}
}

// dialStateless connects a go-sdk client to url on protocol 2026-07-28.
func (b *httpBridge) dialStateless(t testing.TB, url string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: b.httpClient(b.token), MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "integration-handles", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// runIn calls run_python with code in the sandbox of handle h ("": a new
// one) and returns the text, whether it is an error, and the handle the
// result mints.
func runIn(t testing.TB, cs *mcp.ClientSession, h, code string, timeout int) (string, bool, string) {
	t.Helper()
	args := map[string]any{"code": code, "timeout": timeout}
	if h != "" {
		args["session"] = h
	}
	return runWith(t, cs, args)
}

// letGoCallAgain is what a replica answers a call that came as it let the
// handle's idle sandbox go (mcpbridge/run_python.go).
const letGoCallAgain = "let the handle's idle sandbox go as the call came; call again"

// runWith calls run_python with args and returns the text, whether it is
// an error, and the handle the result mints.
func runWith(t testing.TB, cs *mcp.ClientSession, args map[string]any) (string, bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: args})
	if err != nil {
		t.Fatalf("run_python: %v", err)
	}
	// A replica that let the handle's idle sandbox go just as the call
	// came says so and asks for the call again, its state kept: a client
	// does as told, once.
	if text := res.Content[0].(*mcp.TextContent).Text; res.IsError && strings.Contains(text, letGoCallAgain) {
		t.Logf("the replica let the sandbox go as the call came; calling again: %q", text)
		if res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: args}); err != nil {
			t.Fatalf("run_python, called again: %v", err)
		}
	}
	var sc struct {
		Session string `json:"session"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &sc)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError, sc.Session
}

// removeResumable removes, at the end of the test, the resumable
// sandboxes the bridge processes pids left running on e.
func removeResumable(t testing.TB, e testEngine, pids ...*httpBridge) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, ok := e.(engine.Resumer)
		for _, b := range pids {
			for _, c := range containersOf(t, e, b.pid) {
				if ok {
					r.RemoveSandbox(ctx, "", c.ID)
				}
			}
		}
	})
}

// TestHandleAcrossReplicas: replicas sharing MCP_BRIDGE_HANDLE_KEY resume
// each other's handles; a replica killed in a call loses no sandbox; a
// sandbox outlives a graceful stop of the replica that started it.
func TestHandleAcrossReplicas(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		key, token := rand.Text()+rand.Text(), rand.Text()
		r1 := startHTTPBridge(t, e, replicaEnv(key, token, "r1"))
		r2 := startHTTPBridge(t, e, replicaEnv(key, token, "r2"))
		removeResumable(t, e, r1, r2)
		c1, c2 := r1.dialStateless(t, r1.url), r2.dialStateless(t, r2.url)

		text, isErr, h := runIn(t, c1, "", "x = 41\nprint('set')", 30)
		if isErr || h == "" || !strings.HasSuffix(text, "set") {
			t.Fatalf("first call on r1: %v %q (handle %q)", isErr, text, h)
		}
		if text, isErr, again := runIn(t, c2, h, "x += 1\nprint(x)", 30); isErr || text != "42" || again != "" {
			t.Fatalf("the handle on r2: %v %q", isErr, text)
		}
		if text, isErr, _ := runIn(t, c1, h, "x += 1\nprint(x)", 30); isErr || text != "43" {
			t.Fatalf("back on r1: %v %q", isErr, text)
		}

		// Resources of the handle's sandbox are read through any replica:
		// the whole output cut to the budget, and a file out.
		ctx := context.Background()
		res, err := c1.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"session": h,
			"code": "print('y' * 50000)\nopen('/workspace/out/t.csv', 'w').write('a,b\\n1,2\\n')"}})
		if err != nil || res.IsError {
			t.Fatalf("a call with a big output and a file: %v %+v", err, res)
		}
		var uris []string
		for _, c := range res.Content {
			if l, ok := c.(*mcp.ResourceLink); ok {
				uris = append(uris, l.URI)
			}
			if e, ok := c.(*mcp.EmbeddedResource); ok && e.Resource != nil {
				uris = append(uris, e.Resource.URI)
			}
		}
		if len(uris) != 2 {
			t.Fatalf("resource URIs %q, want the output's and the file's", uris)
		}
		for _, u := range uris {
			if !strings.HasSuffix(u, "?session="+h) {
				t.Fatalf("URI %q does not name the handle", u)
			}
			got, err := c2.ReadResource(ctx, &mcp.ReadResourceParams{URI: u})
			if err != nil || len(got.Contents) != 1 {
				t.Fatalf("reading %s through r2: %v", u, err)
			}
			if c := got.Contents[0]; !strings.Contains(c.Text, strings.Repeat("y", 50000)) && c.Text != "a,b\n1,2\n" {
				t.Fatalf("%s through r2: %.100q", u, c.Text)
			}
		}

		// Two calls racing on one handle through both replicas: both
		// run, one after the other.
		var wg sync.WaitGroup
		outs := make([]string, 2)
		for i, c := range []*mcp.ClientSession{c1, c2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				text, isErr, _ := runIn(t, c, h, "import time\ntime.sleep(0.5)\nx += 1\nprint(x)", 30)
				if isErr {
					t.Errorf("racing call %d: %q", i, text)
				}
				outs[i] = text
			}()
		}
		wg.Wait()
		if !(outs[0] == "44" && outs[1] == "45" || outs[0] == "45" && outs[1] == "44") {
			t.Fatalf("racing calls printed %q", outs)
		}

		// r2 killed in the middle of a call: the sandbox lives on, the
		// call is interrupted, and r1 continues with the state.
		killed := make(chan error, 1)
		go func() {
			_, err := c2.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
				"code": "import time\nfor _ in range(600):\n    time.sleep(0.1)", "timeout": 120, "session": h}})
			killed <- err
		}()
		time.Sleep(1500 * time.Millisecond)
		r2.cmd.Process.Signal(syscall.SIGKILL)
		<-r2.done
		if err := <-killed; err == nil {
			t.Fatal("the call through the killed replica answered")
		}
		if text, isErr, _ := runIn(t, c1, h, "print(x)", 60); isErr || text != "45" {
			t.Fatalf("after r2 was killed in a call: %v %q", isErr, text)
		}

		// r1 stopped gracefully: r3 resumes the handle.
		r1.cleanup()
		r3 := startHTTPBridge(t, e, replicaEnv(key, token, "r3"))
		removeResumable(t, e, r3)
		c3 := r3.dialStateless(t, r3.url)
		if text, isErr, _ := runIn(t, c3, h, "print(x)", 60); isErr || text != "45" {
			t.Fatalf("on r3 after r1 stopped: %v %q", isErr, text)
		}
		// A replica with another key refuses it, saying so.
		r4 := startHTTPBridge(t, e, replicaEnv(rand.Text()+rand.Text(), token, "r4"))
		if text, isErr, _ := runIn(t, r4.dialStateless(t, r4.url), h, "print(x)", 30); !isErr || !strings.Contains(text, "minted by another bridge") {
			t.Fatalf("a replica with another key: %v %q", isErr, text)
		}
	})
}

// TestHandleEndsAcrossReplicas: a persistent sandbox idle past
// MCP_BRIDGE_SESSION_IDLE_TIMEOUT ends itself, and its handle says it
// expired on another replica; the sweep of a replica that starts removes
// it; a handle whose container was removed says so; a client holding as
// many handles as MCP_BRIDGE_MAX_HANDLES allows is refused one more.
func TestHandleEndsAcrossReplicas(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		key, token := rand.Text()+rand.Text(), rand.Text()
		// No warm pool: the running sandboxes are the handles' (a warm
		// one carries the resumable label too, and may start any time).
		extra := []string{"MCP_BRIDGE_SESSION_IDLE_TIMEOUT=2", "MCP_BRIDGE_MAX_HANDLES=2", "MCP_BRIDGE_POOL_SIZE=0"}
		r1 := startHTTPBridge(t, e, replicaEnv(key, token, "r1", extra...))
		r2 := startHTTPBridge(t, e, replicaEnv(key, token, "r2", extra...))
		removeResumable(t, e, r1, r2)
		c1, c2 := r1.dialStateless(t, r1.url), r2.dialStateless(t, r2.url)

		_, _, idle := runIn(t, c1, "", "x = 1", 30)
		_, _, removed := runIn(t, c1, "", "x = 2", 30)
		if text, isErr, h := runIn(t, c1, "", "x = 3", 30); !isErr || h != "" || !strings.Contains(text, "MCP_BRIDGE_MAX_HANDLES") {
			t.Fatalf("a third handle past the limit of 2: %v %q", isErr, text)
		}
		// The second sandbox removed behind the bridges' backs.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var removedID string
		for _, c := range containersOf(t, e, r1.pid) {
			if c.State == "running" && c.Labels[engine.LabelResumable] != "" {
				removedID = c.ID // either of the two: the check below finds out which
			}
		}
		if err := e.(engine.Resumer).RemoveSandbox(ctx, "", removedID); err != nil {
			t.Fatal(err)
		}
		// Both idle past the timeout: the one left ends itself (its
		// container stops), however late a loaded machine lets it.
		waitFor(t, time.Minute, "the sandbox left ending itself after its 2 s idle timeout", func() bool {
			for _, c := range containersOf(t, e, r1.pid) {
				if c.State == "running" && c.Labels[engine.LabelResumable] != "" {
					return false
				}
			}
			return true
		})
		texts := map[string]string{}
		for _, h := range []string{idle, removed} {
			text, isErr, _ := runIn(t, c2, h, "print(x)", 30)
			if !isErr {
				t.Fatalf("a handle after its sandbox ended: %q", text)
			}
			texts[h] = text
		}
		expired, gone := 0, 0
		for _, text := range texts {
			switch {
			case strings.Contains(text, "it expired: it ended itself after its idle timeout"):
				expired++
			case strings.Contains(text, "its container no longer exists"):
				gone++
			default:
				t.Errorf("unexpected refusal: %q", text)
			}
		}
		if expired != 1 || gone != 1 {
			t.Fatalf("%d expired, %d gone; want one of each: %q", expired, gone, texts)
		}
		// A replica that starts sweeps the ended sandbox away.
		r3 := startHTTPBridge(t, e, replicaEnv(key, token, "r3", extra...))
		deadline := time.Now().Add(30 * time.Second)
		for {
			left := 0
			for _, c := range containersOf(t, e, r1.pid) {
				if c.State != "running" {
					left++
				}
			}
			if left == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d ended sandboxes of r1 left 30 s after r3 started", left)
			}
			time.Sleep(200 * time.Millisecond)
		}
		_ = r3
	})
}

// An alternating sends each request to the next of hosts in turn, as a
// round-robin balancer does.
type alternating struct {
	base  http.RoundTripper
	hosts []string
	n     atomic.Int64
}

func (a *alternating) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host = a.hosts[int(a.n.Add(1))%len(a.hosts)]
	r.Host = r.URL.Host
	return a.base.RoundTrip(r)
}

// TestHandleConfirmAcrossReplicas: a confirmation asked through an
// input-required result (SEP-2322) is answered through whichever replica
// the client's retry reaches; the call goes on in its sandbox.
func TestHandleConfirmAcrossReplicas(t *testing.T) {
	t.Parallel()
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		home, _ := npmHome(t)
		writeFile(t, filepath.Join(home, "MCPs", "policy.json"), everythingPolicy)
		key, token := rand.Text()+rand.Text(), rand.Text()
		r1 := startHTTPBridge(t, e, replicaEnv(key, token, "r1", "HOME="+home))
		r2 := startHTTPBridge(t, e, replicaEnv(key, token, "r2", "HOME="+home))
		removeResumable(t, e, r1, r2)
		var asked atomic.Int64
		copts := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept"}, nil
		}}
		rr := &alternating{base: bearer{r1.base, token}, hosts: []string{hostPort(r1.url), hostPort(r2.url)}}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "integration-confirm", Version: "1"}, copts).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: r1.url, HTTPClient: &http.Client{Transport: rr}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		text, isErr, h := runWith(t, cs, map[string]any{"servers": []string{"everything"}, "code": "x = await mcp_everything.get_sum(a=20, b=22)\nprint(x)"})
		if isErr || h == "" || !strings.HasSuffix(text, "The sum of 20 and 22 is 42.") {
			t.Fatalf("a confirmed call minting a handle: %v %q", isErr, text)
		}
		for i := range 3 {
			text, isErr, _ := runWith(t, cs, map[string]any{"servers": []string{"everything"}, "session": h,
				"code": "print(await mcp_everything.get_sum(a=1, b=2), x[-3:])"})
			if isErr || text != "The sum of 1 and 2 is 3. 42." {
				t.Fatalf("confirmed call %d with the handle: %v %q", i, isErr, text)
			}
		}
		// A server loaded through other replicas is called through a new
		// one without being listed: the replica that resumes learns it.
		r3 := startHTTPBridge(t, e, replicaEnv(key, token, "r3", "HOME="+home))
		removeResumable(t, e, r3)
		c3 := r3.dialStateless(t, r3.url)
		if text, isErr, _ := runIn(t, c3, h, "print(await mcp_everything.echo(message='hi'))", 60); isErr || !strings.Contains(text, "hi") {
			t.Fatalf("a server loaded elsewhere, not listed: %v %q", isErr, text)
		}
		if n := asked.Load(); n != 4 {
			t.Fatalf("%d questions, want 4", n)
		}
		if !strings.Contains(r1.log.String()+r2.log.String(), "carried an answer to a call waiting on another replica") {
			t.Fatal("no answer crossed to the other replica")
		}
	})
}

// TestHandleEngines: replicas over MCP_BRIDGE_ENGINES resume each other's
// handles on the engine each names; a handle naming an engine a replica
// does not have, or a container that is not a sandbox of this bridge,
// is refused saying so.
func TestHandleEngines(t *testing.T) {
	t.Parallel()
	names := engineNames()
	if !slices.Contains(names, "docker") || !slices.Contains(names, "podman") {
		t.Skip("needs both docker and podman in MCP_TEST_ENGINES")
	}
	d, p := connect(t, "docker"), connect(t, "podman")
	key, token := rand.Text()+rand.Text(), rand.Text()
	multi := func(name string) *httpBridge {
		o := replicaEnv(key, token, name, "MCP_BRIDGE_RUNTIME=", "MCP_BRIDGE_ENGINES=docker podman", "MCP_BRIDGE_POOL_SIZE=0", "MCP_BRIDGE_TASK_AFTER=0")
		return startHTTPBridge(t, d, o)
	}
	m1, m2 := multi("m1"), multi("m2")
	single := startHTTPBridge(t, d, replicaEnv(key, token, "s1", "MCP_BRIDGE_POOL_SIZE=0"))
	removeResumable(t, d, m1, m2, single)
	removeResumable(t, p, m1, m2)
	c1, c2, cs := m1.dialStateless(t, m1.url), m2.dialStateless(t, m2.url), single.dialStateless(t, single.url)

	// Two handles on m1: one per engine (the least loaded first).
	_, _, h1 := runIn(t, c1, "", "x = 'one'", 30)
	_, _, h2 := runIn(t, c1, "", "x = 'two'", 30)
	for h, want := range map[string]string{h1: "one", h2: "two"} {
		if text, isErr, _ := runIn(t, c2, h, "print(x)", 30); isErr || text != want {
			t.Fatalf("m2 resuming %s: %v %q", h, isErr, text)
		}
	}
	if len(containersOf(t, d, m1.pid)) != 1 || len(containersOf(t, p, m1.pid)) != 1 {
		t.Fatalf("the two handles are not one per engine: docker %v, podman %v", containersOf(t, d, m1.pid), containersOf(t, p, m1.pid))
	}
	// A task in each, made on m1 and followed on m2: its ID names the
	// engine, whose files m2 reaches.
	for h, want := range map[string]string{h1: "one", h2: "two"} {
		tc1, tc2 := taskClientOf(t, m1), taskClientOf(t, m2)
		res := tc1.call(map[string]any{"code": "print(x)", "session": h})
		if res["resultType"] != "task" {
			t.Fatalf("a call of a declaring client with MCP_BRIDGE_TASK_AFTER=0: %v", res)
		}
		if done := tc2.await(res["taskId"].(string), time.Minute, status("completed", "failed")); taskText(done) != want {
			t.Fatalf("a task in %s's sandbox through m2: %v", want, done)
		}
	}
	// The single-engine replica does not know the engines' names ...
	if text, isErr, _ := runIn(t, cs, h1, "print(x)", 30); !isErr || !strings.Contains(text, "names an engine") {
		t.Fatalf("a named engine's handle on a single-engine replica: %v %q", isErr, text)
	}
	// ... and the multi-engine replicas do not know its unnamed one.
	_, _, hs := runIn(t, cs, "", "x = 's'", 30)
	if text, isErr, _ := runIn(t, c1, hs, "print(x)", 30); !isErr || !strings.Contains(text, "not an entry of MCP_BRIDGE_ENGINES") {
		t.Fatalf("an unnamed engine's handle on a multi-engine replica: %v %q", isErr, text)
	}
	// A container that is not the bridge's, named by a handle minted
	// under the key (as a replica with the key could): refused.
	out, err := exec.Command("docker", "create", os.Getenv("MCP_BRIDGE_IMAGE"), "sleep", "60").Output()
	if err != nil {
		t.Fatalf("creating a container of no bridge: %v", err)
	}
	foreign := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", foreign).Run() })
	keys, _ := handle.NewKeyring(key)
	hf, _ := keys.Mint(handle.Sandbox{Ref: foreign}, token, time.Now())
	if text, isErr, _ := runIn(t, cs, hf, "print(1)", 30); !isErr || !strings.Contains(text, "not a sandbox of this bridge") {
		t.Fatalf("a handle of a container of no bridge: %v %q", isErr, text)
	}
}
