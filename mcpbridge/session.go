package mcpbridge

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// installTimeout bounds installing the proxies of newly loaded servers in
// a client's interpreter.
const installTimeout = 30 * time.Second

// A clientSession is what the bridge keeps for one client connection (an
// MCP session): its sandbox session, the servers it has loaded and its own
// instances of them, and the queue of its calls. Nothing in it is shared
// with another client.
type clientSession struct {
	name    string
	session *entrypoint.Session
	state   *clientState
	events  *clientEvents
	own     *proxyPool  // its instances of the servers that are not shared
	queue   *callQueue  // its run_python calls, one at a time, in order
	outputs outputStore // whole outputs of calls cut to the budget
	files   fileLinks   // the files out its calls reported

	// halted is cancelled to interrupt the session's calls when its MCP
	// session ends (DELETE, shutdown): closing an MCP session waits for
	// the calls in flight, which nothing else would cut short.
	halted context.Context
	halt   context.CancelFunc

	// current is the run_python call in progress, for the proxied calls
	// of its code (nil between calls).
	current atomic.Pointer[callInfo]
	// waiting holds its calls waiting for the client's answer to a
	// question (protocol 2026-07-28).
	waiting suspensions

	mu       sync.Mutex
	toolsGen int64 // the saved tools' generation its interpreter defines
}

// newClientSession returns a client session whose sandbox is not started;
// it belongs to no connection until adopt.
func (b *Bridge) newClientSession() *clientSession {
	name := "session-" + strconv.FormatInt(b.seq.Add(1), 10)
	log := b.log.With("session", name)
	cs := &clientSession{
		name:   name,
		state:  &clientState{},
		events: &clientEvents{log: log},
		queue:  newCallQueue(b.opts.MaxQueuedCalls),
	}
	cs.halted, cs.halt = context.WithCancel(context.Background())
	cs.own = newProxyPool(b.opts.Registry, b.opts.Version, log, b.catalog, false)
	cs.own.metrics = b.metrics
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
	cs.session = entrypoint.New(b.eng, &opts)
	return cs
}

// close stops the session's sandbox and its own proxied servers.
func (cs *clientSession) close() {
	cs.halt()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); cs.session.Close() }()
	go func() { defer wg.Done(); cs.own.close() }()
	wg.Wait()
}

// sessionOf returns the clientSession of the connection ss, creating it
// on first use (from the warm pool when it has a sandbox ready); it is
// closed when the connection ends.
func (b *Bridge) sessionOf(ss *mcp.ServerSession) (*clientSession, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, entrypoint.ErrSessionClosed
	}
	if s, ok := b.sessions[ss]; ok {
		return s, nil
	}
	cs := b.pool.take()
	if cs == nil {
		cs = b.newClientSession()
	} else {
		cs.session.SetIdleTimeout(b.opts.Session.IdleTimeout)
		cs.events.log.Debug("adopted a warm sandbox from the pool")
	}
	cs.events.bind(ss)
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
// installs their proxies in its interpreter.
func (b *Bridge) load(ctx context.Context, cs *clientSession, servers []string) error {
	if len(servers) == 0 {
		return nil
	}
	if err := b.proxiesOf(cs).start(ctx, servers); err != nil {
		return err
	}
	if !cs.state.add(servers) {
		return nil
	}
	res, err := cs.session.Execute(ctx, b.configureCode(cs, cs.state.servers()), installTimeout)
	if err != nil {
		return err
	}
	if res.Status != entrypoint.StatusSuccess {
		return fmt.Errorf("installing the server proxies: %s %s", res.ExceptionType, res.ExceptionMessage)
	}
	return nil
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
