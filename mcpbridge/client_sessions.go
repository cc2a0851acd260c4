package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/live"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/servers"
)

// newClientSession returns a client session whose sandbox is not started;
// it belongs to no connection until adopt.
func (b *Bridge) newClientSession() *clientSession {
	return b.buildClientSession(func(opts *entrypoint.Options) *entrypoint.Session { return entrypoint.New(b.eng, opts) })
}

// buildClientSession returns a client session whose sandbox session
// newSession makes from the bridge's options for it.
func (b *Bridge) buildClientSession(newSession func(*entrypoint.Options) *entrypoint.Session) *clientSession {
	name := "session-" + strconv.FormatInt(b.seq.Add(1), 10)
	log := b.log.With("session", name)
	cs := &clientSession{
		name:   name,
		born:   time.Now(),
		state:  &clientState{},
		events: &clientEvents{log: log},
		queue:  live.NewQueue(b.opts.MaxQueuedCalls),
	}
	cs.halted, cs.halt = context.WithCancel(context.Background())
	cs.servers = b.servers.NewRoute(&servers.Hooks{Logger: log,
		Call: func() servers.Call {
			if ci := cs.current.Load(); ci != nil {
				return ci
			}
			return nil // not a typed nil: no call runs
		},
		Confirm: func(ctx context.Context, c servers.Call, p *policy.Policy, v policy.Verdict, server, tool string, args map[string]any) (string, []any, error) {
			ci, _ := c.(*callInfo)
			return b.confirm(ctx, ci, p, v, cs.name, server, tool, args)
		},
		Audit: func(p *policy.Policy, server, tool string, args map[string]any, began time.Time, outcome string, err error, extra ...any) {
			auditToolCall(b.audit, cs, p, server, tool, args, began, outcome, err, extra...)
		},
	})
	opts := b.opts.Session
	opts.Spec.Session = name
	opts.Logger = log
	opts.RPC = b.rpcHandler(cs)
	opts.Init = func() string {
		gen := b.store.generation()
		code := b.initCode(cs)
		cs.mu.Lock()
		cs.toolsGen = gen
		cs.mu.Unlock()
		return code
	}
	if b.egress != nil {
		cs.egress = b.egress.NewClient(name)
		opts.Egress = cs.egress.Serve
		opts.EgressCA = b.egress.CA()
		// runtime.install: pip's connections reach the indexes and their
		// file hosts only, while the call that asked for it runs, and
		// what it installs goes to a tmpfs of the sandbox's own.
		ic := b.egress.NewInstallClient(name, policy.InstallHosts{Index: b.opts.Packages.IndexHosts(), Files: b.opts.Packages.FileHosts()})
		cs.install = newInstallGate(ic, func() any {
			if ci := cs.current.Load(); ci != nil {
				return ci
			}
			return nil // not a typed nil: no call runs
		})
		opts.EgressInstall = cs.install.serve
		opts.Spec.SiteBytes = b.opts.Packages.SessionMax()
	}
	if b.packages != nil {
		opts.Prepare = b.packages.Prepare
	}
	cs.session = newSession(&opts)
	return cs
}

// sessionOf returns the clientSession of the connection ss, creating it
// on first use (from the warm pool when it has a sandbox ready); it is
// closed when the connection ends.
func (b *Bridge) sessionOf(ss *mcp.ServerSession, extra *mcp.RequestExtra) (*clientSession, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, entrypoint.ErrSessionClosed
	}
	if s, ok := b.sessions[ss]; ok {
		return s, nil
	}
	who, owner := bearerOf(extra)
	if who != "" {
		if problem := b.quota.sandboxes(ownedBy(b.sessions, owner) + b.handles.table.count(owner)); problem != "" {
			return nil, errors.New(problem)
		}
	}
	cs := b.pool.take()
	if cs == nil {
		cs = b.newClientSession()
	} else {
		cs.session.SetIdleTimeout(b.opts.Session.IdleTimeout)
		cs.events.log.Debug("adopted a warm sandbox from the pool")
	}
	cs.events.bind(ss)
	if who != "" {
		cs.owner = owner
	}
	b.sessions[ss] = cs
	if ss != nil {
		go func() {
			ss.Wait()
			b.mu.Lock()
			_, mine := b.sessions[ss]
			delete(b.sessions, ss)
			if mine {
				b.ending.Add(1) // Bridge.Close waits for it
			}
			b.mu.Unlock()
			if mine {
				cs.close()
				b.ending.Done()
			} else {
				// Bridge.Close took it and closes it; wait for that, so
				// that a caller of Close and a waiter here agree.
				cs.session.Close()
			}
			b.log.Debug("client session ended; sandbox and its servers stopped", "session", cs.name)
		}()
	}
	return cs, nil
}

// existing returns the clientSession of the connection ss, or nil when
// it has none (it made no call yet, or it ended).
func (b *Bridge) existing(ss *mcp.ServerSession) *clientSession {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sessions[ss]
}

// load starts the named servers and, when any is new to the session,
// installs their proxies in its interpreter and, for a handle's sandbox,
// records them as granted (handle_grants.go).
func (b *Bridge) load(ctx context.Context, cs *clientSession, servers []string) error {
	if len(servers) == 0 {
		return nil
	}
	if err := cs.servers.Start(ctx, servers); err != nil {
		return err
	}
	if !cs.state.add(servers) {
		return b.handles.recordGrants(ctx, cs) // one that failed before
	}
	cs.grantsDirty.Store(true)
	res, err := cs.session.Execute(ctx, b.configureCode(cs, cs.state.servers()), installTimeout)
	if err != nil {
		return err
	}
	if res.Status != entrypoint.StatusSuccess {
		return fmt.Errorf("installing the server proxies: %s %s", res.ExceptionType, res.ExceptionMessage)
	}
	// A handle's granted servers are part of its authenticated state,
	// for the replicas that resume it.
	return b.handles.recordGrants(ctx, cs)
}

// syncSavedTools defines in the session's interpreter the tools saved
// (by any session) since it was initialized.
func (b *Bridge) syncSavedTools(ctx context.Context, cs *clientSession) error {
	gen := b.store.generation()
	cs.mu.Lock()
	current := cs.toolsGen == gen
	cs.mu.Unlock()
	if current || !cs.session.Ready() {
		return nil // a sandbox yet to start defines them all in its Init
	}
	res, err := cs.session.Execute(ctx, b.savedToolsCode(), installTimeout)
	if err != nil {
		return err
	}
	if res.Status != entrypoint.StatusSuccess {
		return fmt.Errorf("defining the saved tools: %s %s", res.ExceptionType, res.ExceptionMessage)
	}
	cs.mu.Lock()
	cs.toolsGen = max(cs.toolsGen, gen)
	cs.mu.Unlock()
	return nil
}

// ownedBy counts the sessions of the client whose digest is owner.
func ownedBy(sessions map[*mcp.ServerSession]*clientSession, owner [32]byte) int {
	n := 0
	for _, cs := range sessions {
		if cs.owner == owner {
			n++
		}
	}
	return n
}

// sessionsOf counts the MCP sessions of the client whose digest is owner.
func (b *Bridge) sessionsOf(owner [32]byte) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return ownedBy(b.sessions, owner)
}
