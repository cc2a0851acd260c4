// Package mcpbridge serves the run_python tool over MCP: one warm sandbox
// session per client connection, proxied MCP servers reachable from the
// sandbox code, results rendered as the original bridge renders them.
package mcpbridge

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/audit"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/egress"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/httpserve"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/packages"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/servers"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/tasks"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/toolsearch"
)

// A Bridge is the MCP server of the run_python tool.
type Bridge struct {
	eng    engine.Engine
	opts   Options
	log    *slog.Logger
	server *mcp.Server
	seq    atomic.Int64

	servers        *servers.Set // the proxied servers: shared instances, catalog, search
	store          *store
	pool           *sandboxPool // warm sandboxes for new sessions (nil: none)
	metrics        *metrics
	policy         *policy.File             // the tool policy (nil: none)
	searchKeywords *toolsearch.KeywordsFile // the operator's search keywords
	audit          *audit.Log               // nil: no audit records
	egress         *egress.Gateway          // nil: sandboxes get no network endpoint
	packages       *packages.Store          // nil: no package set
	wheels         *packages.Wheels         // pip's wheel for installs
	quota          *callQuota               // run_python calls per client and minute
	handles        *handles                 // the sandboxes behind handles
	forks          *forker                  // copies sandboxes between calls (run_python's fork)
	sleepers       *sleepers                // the sandboxes asleep on the engine; nil: snapshots off
	stopSweep      context.CancelFunc       // ends handles.sweep (nil: none)
	tasks          *tasks.Manager           // the calls that run as tasks (mcpbridge/tasks)
	closing        chan struct{}            // closed when the bridge closes

	requests  httpserve.Requests                // the HTTP requests in flight, for their calls
	calls     atomic.Int64                      // run_python calls in flight
	live      atomic.Pointer[console.Calls]     // the calls the console follows (nil: no console)
	approvals atomic.Pointer[console.Questions] // the questions on the console (nil: no console)
	callSeq   atomic.Int64                      // numbers the calls, for the logs

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*clientSession
	closed   bool
	ending   sync.WaitGroup // sessions whose connection ended, being closed
}
