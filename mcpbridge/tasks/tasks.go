// Package tasks serves the Tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663) for the bridge: a long run_python call of a client that
// declares it is answered at once with a task, which the client polls
// (tasks/get), answers (tasks/update), cancels (tasks/cancel) and follows
// on a subscriptions/listen stream. The bridge runs the call as any
// other; a Manager makes it a task, keeps its record in its sandbox
// under a shared handle key, where every replica reads it (record.go),
// and brings another replica's task the client's answers and
// cancellation (ack.go).
package tasks

import (
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/sandboxfile"
)

// Defaults of Options.
const (
	defaultAfter         = time.Minute
	defaultTTL           = time.Hour
	defaultMax           = 256
	defaultMaxPerSandbox = 16
)

// Options configure the Tasks extension: a run_python call of a client
// that declares it may be answered with a task the client polls, answers
// and cancels.
type Options struct {
	// After is the call timeout above which a call becomes a task
	// (MCP_BRIDGE_TASK_AFTER). Zero: one minute; negative: never (the
	// extension is not offered); a value below a second: every call of
	// a client that declares the extension.
	After time.Duration
	// TTL is how long a task is kept after it ended, however often it is
	// read (MCP_BRIDGE_TASK_TTL). Zero: one hour.
	TTL time.Duration
	// Max bounds the tasks a replica keeps, running or ended
	// (MCP_BRIDGE_MAX_TASKS); a call that would make one more is
	// refused. Zero: 256.
	Max int
	// MaxPerSandbox bounds the tasks of one sandbox (a handle's, or an
	// MCP session's) a replica keeps (MCP_BRIDGE_MAX_TASKS_PER_SANDBOX).
	// Zero, and at most: 16, the records a sandbox keeps.
	MaxPerSandbox int
}

// withDefaults returns o with every zero value replaced by its default.
func (o Options) withDefaults() Options {
	if o.After == 0 {
		o.After = defaultAfter
	}
	if o.TTL <= 0 {
		o.TTL = defaultTTL
	}
	if o.Max <= 0 {
		o.Max = defaultMax
	}
	if o.MaxPerSandbox <= 0 || o.MaxPerSandbox > defaultMaxPerSandbox {
		o.MaxPerSandbox = defaultMaxPerSandbox
	}
	return o
}

// Offered reports whether o offers the extension (After is not negative).
func (o Options) Offered() bool { return o.After >= 0 }

// A Host is what a Manager needs of the bridge whose calls become tasks.
type Host struct {
	// Engine reaches the sandboxes of other replicas' tasks.
	Engine engine.Engine
	// Keys mints and checks task IDs.
	Keys *handle.Keyring
	// Files writes and reads the tasks' records in their sandboxes.
	Files *sandboxfile.Keeper
	// Shared says the replicas share the handle key: a handle's task
	// keeps its record in its sandbox, where every replica reads it.
	Shared bool
	// MaxTimeout is the longest a call runs.
	MaxTimeout time.Duration
	// Logger logs what tasks do.
	Logger *slog.Logger
	// CallTimeout returns the timeout of a run_python call's arguments,
	// false when they are not valid (the call runs, and fails, as no
	// task).
	CallTimeout func(args json.RawMessage) (time.Duration, bool)
	// ResultStatus returns the status a call's result carries.
	ResultStatus func(*mcp.CallToolResult) string
	// Token returns the bearer token of a request's HTTP headers ("" when
	// none): task IDs of handles are bound to it.
	Token func(*mcp.RequestExtra) string
}

// A Manager makes long calls tasks and answers the extension's methods.
type Manager struct {
	host    Host
	opts    Options
	log     *slog.Logger
	tasks   taskTable     // the tasks this replica runs or keeps
	sweep   sync.Once     // starts sweepTasks
	reads   taskReadCache // the records of other replicas' tasks read lately
	writers sync.WaitGroup
	closing chan struct{} // closed when the bridge closes
	closed  sync.Once
}

// New returns the Manager of a bridge's tasks.
func New(host Host, opts Options) *Manager {
	return &Manager{host: host, opts: opts.withDefaults(), log: host.Logger, closing: make(chan struct{})}
}

// taskSweepInterval is how often a bridge forgets the tasks whose time to
// live ended.
const taskSweepInterval = time.Minute

// sweepTasks forgets, every taskSweepInterval until the bridge closes,
// the tasks whose time to live ended.
func (m *Manager) sweepTasks() {
	tick := time.NewTicker(taskSweepInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.closing:
			return
		case now := <-tick.C:
			if n := m.tasks.sweep(now); n > 0 {
				m.log.Debug("forgot tasks whose time to live ended", "count", n)
			}
		}
	}
}

// Close fails the tasks still running when the bridge closes: their
// calls are interrupted with their sandboxes (or, under a shared key,
// left to another replica, which reads them as lost). Call it before
// their calls are interrupted, so that they fail, not complete.
func (m *Manager) Close() {
	m.closed.Do(func() { close(m.closing) })
	for _, t := range m.tasks.all() {
		t.Lost("the bridge replica running this task stopped; the call was interrupted")
	}
}

// Wait waits for the last records of the tasks Close failed, and for the
// acknowledgements this replica waits for, which Close ends.
func (m *Manager) Wait() { m.writers.Wait() }
