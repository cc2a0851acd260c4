package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/render"
)

// A handleCall is how a run_python call finds its sandbox behind a
// handle: the one its session argument names, or a new one whose handle
// its result carries.
type handleCall struct {
	held   *heldSandbox
	minted bool   // the call starts the sandbox and mints its handle
	token  string // the client's bearer token, the handle is bound to
}

// sandboxFor returns the client session of a call behind a handle (args
// names one, or req came without an MCP session), or a problem to answer
// with instead (nothing ran). hc is nil for a call of an MCP session.
func (hs *handles) sandboxFor(req *mcp.CallToolRequest, args callArgs) (cs *clientSession, hc *handleCall, problem string) {
	token, client := clientToken(req)
	if args.session != "" {
		held, problem := hs.heldByHandle(args.session, token, client)
		if held == nil {
			return nil, nil, problem
		}
		return held.cs, &handleCall{held: held}, ""
	}
	if !stateless(req) {
		return nil, nil, ""
	}
	if hs.over != nil && token != "" {
		if problem := hs.over(client); problem != "" {
			return nil, nil, problem
		}
	}
	if n := hs.table.count(client); n >= hs.opts.MaxPerClient {
		return nil, nil, fmt.Sprintf("this client holds %d live sandbox handles, the most MCP_BRIDGE_MAX_HANDLES allows: "+
			"pass one of them as session, or wait for one to expire (%v without a call)", n, hs.opts.IdleTimeout)
	}
	cs = hs.fresh()
	cs.session.SetIdleTimeout(hs.opts.IdleTimeout)
	return cs, &handleCall{held: &heldSandbox{cs: cs, client: client}, minted: true, token: token}, ""
}

// mint pins the sandbox of a new handle's call and records it, returning
// the handle; the caller closes the session when it fails.
func (hs *handles) mint(ctx context.Context, hc *handleCall) (string, error) {
	id, engineName, err := hc.held.cs.session.Pin(ctx)
	if err != nil {
		return "", err
	}
	h, err := hs.keys.Mint(handle.Sandbox{Engine: engineName, Ref: id}, hc.token, time.Now())
	if err != nil {
		return "", err
	}
	cs := hc.held.cs
	cs.handleKey, cs.handle, cs.sandbox = handleKey(engineName, id), h, handle.Sandbox{Engine: engineName, Ref: id}
	if hs.opts.Key != "" {
		// Shared with other replicas: the sandbox outlives this one.
		if err := cs.session.Persist(ctx, hs.persistIdle()); err != nil {
			return "", fmt.Errorf("making the sandbox resumable: %w", err)
		}
	}
	hs.table.add(cs.handleKey, hc.held)
	cs.events.log.Info("minted a sandbox handle", "handle", handle.Redact(h), "engine", engineName, "id", shortRef(id))
	return h, nil
}

// persistIdle is how long a persistent sandbox waits for a call before
// it ends itself: the handles' idle timeout, or twice that where idle
// sandboxes sleep, so that the replica that holds one puts it to sleep
// first.
func (hs *handles) persistIdle() time.Duration {
	if hs.sleeps && hs.opts.IdleTimeout > 0 {
		return 2 * hs.opts.IdleTimeout
	}
	return hs.opts.IdleTimeout
}

// heldByHandle returns the sandbox handle h names, for a client with
// token (client its digest): one this bridge holds, or one another
// replica made, which it resumes; else nil and the problem to answer.
func (hs *handles) heldByHandle(h, token string, client [32]byte) (*heldSandbox, string) {
	sb, err := hs.keys.Check(h, token)
	if err != nil {
		return nil, handleProblem(h, err)
	}
	key := handleKey(sb.Engine, sb.Ref)
	held, why := hs.table.get(key)
	if held == nil && why == "" && hs.opts.Key != "" {
		// Another replica (or an earlier process) holds it: resume it.
		held = hs.resume(key, sb, h, client)
	}
	if held == nil {
		if why == "" {
			why = "this bridge holds no sandbox of it (it was minted by a process that has since stopped, and its sandbox with it)"
		}
		return nil, fmt.Sprintf("the session handle %s can no longer be used: %s; leave session out to start a new sandbox",
			handle.Redact(h), why)
	}
	return held, ""
}

// resume records, as held, the sandbox of a handle another replica
// minted: its first call attaches to it (entrypoint.Resume).
func (hs *handles) resume(key string, sb handle.Sandbox, h string, client [32]byte) *heldSandbox {
	cs := hs.attach(sb)
	cs.handleKey, cs.handle, cs.sandbox, cs.resumed = key, h, sb, true
	cs.session.SetIdleTimeout(hs.opts.IdleTimeout)
	held := &heldSandbox{cs: cs, client: client}
	if other := hs.table.addNew(key, held); other != held {
		go cs.close() // a concurrent call resumed it first
		return other
	}
	cs.events.log.Info("resuming a sandbox handle", "handle", handle.Redact(h), "engine", sb.Engine, "id", shortRef(sb.Ref))
	return held
}

// maxLoadedServers bounds the loaded servers a resumed sandbox reports.
const maxLoadedServers = 256

// loadedServersCode prints the servers the interpreter has loaded, as a
// JSON list of names.
const loadedServersCode = `import json as _j
from mcp import runtime as _r
print(_j.dumps([m["name"] for m in _r.list_loaded_server_metadata()]))
del _j, _r`

// syncLoadedServers learns, once, which servers the interpreter of a
// resumed sandbox loaded on other replicas: its proxies of them call this
// replica now, which starts its own instances of them on their first use.
// What the sandbox says is untrusted: it grants at most the servers of
// the sandbox's granted servers' record (handle_grants.go), which the sandbox
// cannot forge, and of those the ones the interpreter reports, that are
// configured and that the policy lets load. A record that is missing or
// not the bridge's grants none, and is logged as tampering.
func (hs *handles) syncLoadedServers(ctx context.Context, cs *clientSession) {
	if !cs.resumed || cs.serversSynced.Swap(true) {
		return
	}
	res, err := cs.session.Execute(ctx, loadedServersCode, installTimeout)
	if err != nil || res.Status != entrypoint.StatusSuccess {
		cs.events.log.Warn("reading the servers a resumed sandbox loaded", "err", err)
		return
	}
	var names []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &names); err != nil || len(names) > maxLoadedServers {
		cs.events.log.Warn("the servers a resumed sandbox reports do not decode", "err", err, "count", len(names))
		return
	}
	if len(names) == 0 {
		return
	}
	granted, err := hs.readGrants(ctx, cs)
	if err != nil {
		cs.events.log.Warn("a resumed sandbox reports loaded servers without a record of their grant: none granted (the record was removed or tampered with)",
			"reported", names, "err", err)
		return
	}
	var ok, refused []string
	for _, n := range names {
		if !slices.Contains(granted, n) {
			refused = append(refused, n)
			continue
		}
		if !hs.servers.Known(n) {
			continue
		}
		if _, err := cs.servers.Loadable(n); err != nil {
			continue
		}
		ok = append(ok, n)
	}
	if len(refused) > 0 {
		cs.events.log.Warn("a resumed sandbox reports servers no client granted it: not granted (its report was tampered with)",
			"refused", refused, "granted", granted)
	}
	cs.state.add(ok)
}

// gone ends the handle of cs, whose pinned sandbox is gone (err wraps
// entrypoint.ErrPinnedGone and says why), and returns the problem to
// answer the call with.
func (hs *handles) gone(cs *clientSession, err error) string {
	why := err.Error()
	if held := hs.table.end(cs.handleKey, why); held != nil {
		go held.cs.close()
	}
	return fmt.Sprintf("this session handle can no longer be used (%s); leave session out to start a new sandbox", why)
}

// withHandle returns res carrying the handle h: in its structured
// content's session and in one line of text before the rest.
func withHandle(res *mcp.CallToolResult, h string) *mcp.CallToolResult {
	render.SetSession(res, h)
	line := &mcp.TextContent{Text: mintedLine(h)}
	if len(res.Content) > 0 {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			t.Text = mintedLine(h) + "\n" + t.Text
			return res
		}
	}
	res.Content = append([]mcp.Content{line}, res.Content...)
	return res
}

// sweepInterval is how often a bridge whose replicas share the handle key
// removes the persistent sandboxes that have ended.
const sweepInterval = time.Minute

// sweep removes, now and every sweepInterval until ctx ends, the
// persistent sandboxes of the shared key that have ended (idle, died):
// any replica does it, since the one that started a sandbox may be gone.
func (hs *handles) sweep(ctx context.Context, eng engine.Engine) {
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		n := 0
		s, err := engine.As[engine.Sweeper](sctx, eng)
		if err == nil {
			n, err = s.SweepExited(sctx, hs.keys.KeyID())
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			hs.log.Debug("sweeping ended persistent sandboxes", "err", err)
		}
		if n > 0 {
			hs.log.Info("removed ended persistent sandboxes", "count", n)
		}
		if hs.sleeps {
			hs.sleepUnheld(ctx, eng)
		}
		// Sandboxes this replica let go when idle: their sessions (and
		// the server instances they started) end; a call resumes them.
		for _, h := range hs.table.detached() {
			h.cs.leave()
			h.cs.queue.Leave() // a call that found it just before: told to call again
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// close stops the sandboxes behind the handles this bridge holds, or,
// when replicas share the key, leaves them running for the others.
func (hs *handles) close() {
	var wg sync.WaitGroup
	for _, h := range hs.table.all() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if hs.opts.Key != "" {
				h.cs.leave()
			} else {
				h.cs.close()
			}
		}()
	}
	wg.Wait()
}

// shortRef is the first 12 characters of a container reference, for logs.
func shortRef(ref string) string {
	if len(ref) > 12 {
		return ref[:12]
	}
	return ref
}

// sleepUnheld puts to sleep the idle sandboxes of the shared key that no
// replica holds any more (the one that held it is gone): any replica does
// it at its sweep, after asking each runtime whether a bridge called it
// within the idle timeout (entrypoint.SleepIfIdle). Those this replica
// holds it puts to sleep itself, when they idle.
func (hs *handles) sleepUnheld(ctx context.Context, eng engine.Engine) {
	sn, err := engine.As[engine.Snapshotter](ctx, eng)
	if err != nil {
		return // several engines, or none that sleeps
	}
	ids, err := sn.Awake(ctx, hs.keys.KeyID())
	if err != nil {
		hs.log.Debug("listing the sandboxes that may sleep", "err", err)
		return
	}
	for _, id := range ids {
		if held, _ := hs.table.get(handleKey("", id)); held != nil {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		if _, err := entrypoint.SleepIfIdle(sctx, eng, "", id, hs.opts.IdleTimeout, hs.log); err != nil {
			hs.log.Debug("putting an idle sandbox to sleep", "id", shortRef(id), "err", err)
		}
		cancel()
	}
}
