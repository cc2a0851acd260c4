package mcpbridge

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/sandboxfile"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/render"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/tasks"
)

// The bridge's side of the Tasks extension (mcpbridge/tasks): what the
// task manager needs of the bridge (its Host), and the binding of a call
// to its task. A task's call runs through run_python.go as any call
// does (runTask); http.go hands the manager subscriptions to task
// status notifications (Manager.Listen).

// newTasks returns the manager of the bridge's tasks, whose IDs and
// records keys mints and tags.
func (b *Bridge) newTasks(keys *handle.Keyring) *tasks.Manager {
	o := b.opts
	return tasks.New(tasks.Host{
		Engine:     b.eng,
		Keys:       keys,
		Files:      b.handles.files,
		Shared:     o.Handles.Key != "",
		MaxTimeout: o.MaxTimeout,
		Logger:     b.log,
		CallTimeout: func(raw json.RawMessage) (time.Duration, bool) {
			args, problem := parseArgs(raw, o.DefaultTimeout, o.MaxTimeout, b.servers.Known)
			return args.timeout, problem == ""
		},
		ResultStatus: render.Status,
		Token: func(extra *mcp.RequestExtra) string {
			token, _ := bearerOf(extra)
			return token
		},
	}, o.Tasks)
}

// bindTask makes t the task of a call in the sandbox of cs (tasks.Bind):
// a handle's sandbox, checked for the client's token, or the MCP
// session's. It returns the problem to answer the call with instead.
func (b *Bridge) bindTask(ctx context.Context, t *tasks.Task, cs *clientSession, req *mcp.CallToolRequest) string {
	bind := tasks.Binding{Session: req.Session, Owner: cs.name, Logger: cs.events.log}
	if cs.handle != "" {
		token, _ := clientToken(req)
		sb, err := b.handles.keys.Check(cs.handle, token)
		if err != nil {
			return "making the task: " + handleProblem(cs.handle, err)
		}
		bind = tasks.Binding{Sandbox: &sb, Token: token, Owner: cs.handleKey, Files: sandboxfile.Session(cs.session), Logger: cs.events.log}
	}
	return b.tasks.Bind(ctx, t, bind)
}
