package mcpbridge

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/approval"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/egress"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/live"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/oauth"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/render"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/servers"
)

// installTimeout bounds installing the proxies of newly loaded servers in
// a client's interpreter.
const installTimeout = 30 * time.Second

// A clientSession is what the bridge keeps for one client connection (an
// MCP session): its sandbox session, the servers it has loaded and its own
// instances of them, and the queue of its calls. Nothing in it is shared
// with another client.
type clientSession struct {
	name string
	born time.Time // when it was made (for the console)
	// owner is the digest of the client it serves (bearerOf), set when an
	// MCP session adopts it; zero: none known.
	owner   [32]byte
	session *entrypoint.Session
	state   *clientState
	events  *clientEvents
	servers *servers.Route   // its use of the servers, its own instances of those not shared
	queue   *live.Queue      // its run_python calls, one at a time, in order
	outputs render.Outputs   // whole outputs of calls cut to the budget
	files   render.FileLinks // the files out its calls reported
	egress  *egress.Client   // its side of the egress gateway (nil: none)
	// handleKey is its key in the bridge's handle table, when a handle
	// names its sandbox ("": none); set before its first call.
	handleKey string
	// handle is that handle, to name the session in its resources' URIs.
	handle string
	// sandbox is the engine and container the handle names.
	sandbox handle.Sandbox
	// grantsDirty says the servers loaded changed since they were last
	// recorded in the sandbox (handle_grants.go).
	grantsDirty atomic.Bool
	// resumed says another replica (or process) started its sandbox;
	// serversSynced, that it learnt the servers the interpreter loaded
	// there (syncLoadedServers).
	resumed       bool
	serversSynced atomic.Bool
	// dropped says the bridge let its idle sandbox go (handleTable.detached).
	dropped atomic.Bool
	// install is its runtime's install endpoint, open while an install
	// of its current call may run (nil: no gateway).
	install *installGate

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
	waiting live.Suspensions

	mu       sync.Mutex
	toolsGen int64 // the saved tools' generation its interpreter defines
}

// close stops the session's sandbox and its own proxied servers.
func (cs *clientSession) close() {
	cs.halt()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); cs.session.Close() }()
	go func() { defer wg.Done(); cs.servers.Close() }()
	wg.Wait()
	cs.install.close()
	cs.egress.Close()
}

// leave detaches from the session's sandbox, leaving it running for
// another replica, and stops its own proxied servers.
func (cs *clientSession) leave() {
	cs.halt()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); cs.session.Leave() }()
	go func() { defer wg.Done(); cs.servers.Close() }()
	wg.Wait()
	cs.install.close()
	cs.egress.Close()
}

// A callInfo is what the bridge knows of a client session's run_python
// call in progress, for the proxied calls its code makes.
type callInfo struct {
	// Call is where a question to the user about a proxied call goes:
	// its MCP request's context, its client's session, and how to ask.
	approval.Call
	// toolCalls counts the proxied calls the code made so far.
	toolCalls atomic.Int64
	// who is the person calling, with OAuth (nil: no identity).
	who *oauth.Identity
}

// CountToolCall counts one more proxied call of the call and returns how
// many it made so far (servers.Call).
func (ci *callInfo) CountToolCall() int64 { return ci.toolCalls.Add(1) }
