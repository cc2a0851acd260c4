package mcpbridge

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
)

// defaultMaxForks is Options.MaxForks's zero value.
const defaultMaxForks = 4

// A forker copies sandboxes between calls (run_python's fork) and puts
// each copy behind a handle of its own.
type forker struct {
	max int // the most copies a call makes; 0: sandboxes do not fork
	hs  *handles
	eng engine.Engine
	// build returns a client session on the sandbox a session of
	// newSession reaches (Bridge.buildClientSession).
	build func(newSession func(*entrypoint.Options) *entrypoint.Session) *clientSession
	// over says why the client whose digest is client may not hold n more
	// sandboxes ("" when it may): MCP_BRIDGE_PERSON_MAX_SANDBOXES.
	over func(client [32]byte, n int) string
}

// maxForks is the most copies one call's fork makes under o: 0 when
// sandboxes do not fork (snapshots are off).
func maxForks(o *Options) int {
	if o.Session.Sleep == nil {
		return 0
	}
	if o.MaxForks > 0 {
		return o.MaxForks
	}
	return defaultMaxForks
}

// reseedCode makes a fork's random generators its own: a restored copy
// has its parent's process, PID included, so Python's random, OpenSSL's
// generator and numpy's global one would repeat the parent's and the
// siblings' numbers (os.urandom asks the kernel: it differs already).
const reseedCode = `import os as _o, random as _r, sys as _s
_r.seed(_o.urandom(32))
try:
    import ssl as _ssl
    _ssl.RAND_add(_o.urandom(32), 32.0)
    del _ssl
except Exception:
    pass
if "numpy" in _s.modules:
    try:
        _s.modules["numpy"].random.seed(int.from_bytes(_o.urandom(4), "little"))
    except Exception:
        pass
del _o, _r, _s`

// forkProblem says why a call may not fork its sandbox into n ("" when
// it may), before its code runs.
func (f *forker) problem(req *mcp.CallToolRequest, n int) string {
	max := f.max
	switch {
	case max == 0:
		return "'fork' needs sessions that can be checkpointed: this bridge runs without MCP_BRIDGE_SNAPSHOTS=1 (Docker with gVisor); nothing was run"
	case n > max:
		return fmt.Sprintf("'fork' asks for %d copies; this bridge makes at most %d (MCP_BRIDGE_MAX_FORKS); nothing was run", n, max)
	}
	token, client := clientToken(req)
	if token != "" && f.over != nil {
		if problem := f.over(client, n); problem != "" {
			return "'fork' " + problem
		}
	}
	if held := f.hs.table.count(client); held+n > f.hs.opts.MaxPerClient {
		return fmt.Sprintf("'fork' would give this client %d sandbox handles, more than MCP_BRIDGE_MAX_HANDLES allows (%d); nothing was run",
			held+n, f.hs.opts.MaxPerClient)
	}
	return ""
}

// fork copies the sandbox of cs, whose call has just run (its queue is
// held: no call runs in it), into n sandboxes, each behind a handle of
// its own for the client of req, with its own client session (egress
// budget, loaded servers, outputs). The parent goes on as it was.
func (f *forker) fork(ctx context.Context, req *mcp.CallToolRequest, cs *clientSession, n int) (_ []string, err error) {
	token, client := clientToken(req)
	hs := f.hs
	labels := map[string]string{engine.LabelSession: cs.name + "/fork"}
	t0 := time.Now()
	ids, engineName, ferr := cs.session.Fork(ctx, n, labels)
	if ferr != nil {
		return nil, ferr
	}
	out := make([]string, 0, len(ids))
	var made []*clientSession
	defer func() {
		if err == nil {
			return
		}
		// None of them is handed out: all go.
		for _, fcs := range made {
			hs.table.end(fcs.handleKey, "its fork failed")
			go fcs.close()
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for _, id := range ids {
			_ = engine.RemoveSandbox(rctx, f.eng, engineName, id)
		}
	}()
	for i, id := range ids {
		sb := handle.Sandbox{Engine: engineName, Ref: id}
		h, merr := hs.keys.Mint(sb, token, time.Now())
		if merr != nil {
			return nil, fmt.Errorf("minting the handle of fork %d: %w", i+1, merr)
		}
		fcs := f.build(func(opts *entrypoint.Options) *entrypoint.Session {
			if hs.opts.Key != "" {
				// Shared with other replicas: it outlives this one.
				return entrypoint.Resume(f.eng, sb.Engine, sb.Ref, opts)
			}
			return entrypoint.Adopt(f.eng, sb.Engine, sb.Ref, opts)
		})
		fcs.handleKey, fcs.handle, fcs.sandbox, fcs.resumed = handleKey(engineName, id), h, sb, true
		fcs.session.SetIdleTimeout(hs.opts.IdleTimeout)
		hs.table.add(fcs.handleKey, &heldSandbox{cs: fcs, client: client})
		made = append(made, fcs)
		res, rerr := fcs.session.Execute(ctx, reseedCode, time.Minute)
		if rerr == nil && res.Status != entrypoint.StatusSuccess {
			rerr = fmt.Errorf("%s: %s", res.ExceptionType, res.ExceptionMessage)
		}
		if rerr != nil {
			return nil, fmt.Errorf("reseeding the random generators of fork %d: %w", i+1, rerr)
		}
		out = append(out, h)
	}
	cs.events.log.Info("forked the sandbox", "forks", len(out), "took", time.Since(t0).Round(time.Millisecond))
	return out, nil
}
