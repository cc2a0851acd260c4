package mcpbridge

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// installTimeout bounds installing the proxies of newly loaded servers in
// a client's interpreter.
const installTimeout = 30 * time.Second

// A clientSession is what the bridge keeps for one client connection:
// its sandbox session and the servers it has loaded.
type clientSession struct {
	session *entrypoint.Session
	state   *clientState
	events  *clientEvents
	outputs outputStore // whole outputs of calls cut to the budget
	files   fileLinks   // the files out its calls reported
}

// sessionOf returns the clientSession of the connection ss, creating it
// on first use; its sandbox session is closed when the connection ends.
func (b *Bridge) sessionOf(ss *mcp.ServerSession) (*clientSession, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, entrypoint.ErrSessionClosed
	}
	if s, ok := b.sessions[ss]; ok {
		return s, nil
	}
	name := "client-" + strconv.FormatInt(b.seq.Add(1), 10)
	log := b.log.With("session", name)
	cs := &clientSession{state: &clientState{}, events: &clientEvents{ss: ss, log: log}}
	opts := b.opts.Session
	opts.Spec.Session = name
	opts.Logger = log
	opts.RPC = b.rpcHandler(cs.state, cs.events)
	opts.Init = func() string { return b.initCode(cs.state.servers()) }
	cs.session = entrypoint.New(b.eng, &opts)
	b.sessions[ss] = cs
	if ss != nil {
		go func() {
			ss.Wait()
			cs.session.Close() // Bridge.Close, racing with this, waits for it too
			b.mu.Lock()
			delete(b.sessions, ss)
			b.mu.Unlock()
			b.log.Debug("client disconnected; sandbox stopped", "session", name)
		}()
	}
	return cs, nil
}

// load starts the named servers and, when any is new to the session,
// installs their proxies in its interpreter.
func (b *Bridge) load(ctx context.Context, cs *clientSession, servers []string) error {
	if len(servers) == 0 {
		return nil
	}
	if err := b.proxies.start(ctx, servers); err != nil {
		return err
	}
	if !cs.state.add(servers) {
		return nil
	}
	res, err := cs.session.Execute(ctx, b.configureCode(cs.state.servers()), installTimeout)
	if err != nil {
		return err
	}
	if res.Status != entrypoint.StatusSuccess {
		return fmt.Errorf("installing the server proxies: %s %s", res.ExceptionType, res.ExceptionMessage)
	}
	return nil
}
