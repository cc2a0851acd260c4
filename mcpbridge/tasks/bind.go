package tasks

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/sandboxfile"
)

// Register adds the extension's methods to s, when it is offered.
func (m *Manager) Register(s *mcp.Server) {
	if !m.opts.Offered() {
		return
	}
	s.AddReceivingMiddleware(m.taskMiddleware)
	mcp.AddReceivingCustomMethod(s, methodTasksGet, m.tasksGet)
	mcp.AddReceivingCustomMethod(s, methodTasksUpdate, m.tasksUpdate)
	mcp.AddReceivingCustomMethod(s, methodTasksCancel, m.tasksCancel)
}

// A Binding is what a task's call runs in: a handle's sandbox, or an MCP
// session's.
type Binding struct {
	// Sandbox is the handle's sandbox, checked for Token; nil for a call
	// of an MCP session.
	Sandbox *handle.Sandbox
	// Token is the client's bearer token ("" when none).
	Token string
	// Session is the MCP session of a call of one.
	Session *mcp.ServerSession
	// Owner names the sandbox for the bound per sandbox: the handle's key
	// in the bridge's table, or the client session's name.
	Owner string
	// Files reaches the handle's sandbox through the session that drives
	// it.
	Files sandboxfile.Files
	// Logger is the client session's.
	Logger *slog.Logger
}

// Bind makes t the task of a call (b): it mints the task's ID (bound to
// the handle's sandbox, or to the MCP session), keeps its record where
// every replica reads it, and lets the request be answered. It returns
// the problem to answer the call with instead.
func (m *Manager) Bind(ctx context.Context, t *Task, b Binding) string {
	if b.Sandbox != nil {
		id, tk, err := m.host.Keys.MintTask(*b.Sandbox, b.Token, t.created)
		if err != nil {
			return "making the task: " + err.Error()
		}
		t.id, t.sb, t.owner = id, tk.Sandbox, b.Owner
		if m.host.Shared {
			t.nonce, t.files = tk.Nonce, b.Files
		}
	} else {
		t.id, t.ss, t.owner = newSessionTaskID(), b.Session, b.Owner
	}
	if err := m.tasks.add(t, m.opts.Max, m.opts.MaxPerSandbox); err != nil {
		return err.Error()
	}
	if t.nonce != "" {
		// The ID is answered once any replica can read the task.
		if err := m.writeTaskRecord(ctx, t); err != nil {
			m.tasks.remove(t)
			return "keeping the task's record in the sandbox, where every replica reads it: " + err.Error()
		}
		go m.keepTaskRecord(t)
	}
	close(t.bound)
	b.Logger.Info("a call runs as a task", "task", redactTaskID(t.id), "timeout", t.timeout)
	return ""
}
