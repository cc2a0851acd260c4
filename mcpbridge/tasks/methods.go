package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/protocol"
)

// taskMiddleware turns a long run_python call of a client that declares
// the extension into a task, and checks the task methods' requests
// before their handlers: the client declares the extension, and Mcp-Name
// carries the task ID.
func (m *Manager) taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			if call, ok := req.(*mcp.CallToolRequest); ok {
				if timeout, ok := m.asTask(call); ok {
					return m.startTask(ctx, call, timeout, next)
				}
			}
		case methodTasksGet, methodTasksUpdate, methodTasksCancel:
			r, ok := req.(*mcp.ServerRequest[*taskParams])
			if !ok {
				break
			}
			if !declaresTasks(r.ClientCapabilities()) {
				return nil, errMissingTasks()
			}
			if extra := r.Extra; extra != nil && extra.Header != nil && extra.Header.Get("Mcp-Protocol-Version") >= protocol.Stateless {
				switch name := extra.Header.Get("Mcp-Name"); {
				case name == "":
					return nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("missing required Mcp-Name header for method %q: it carries the task ID", method)}
				case r.Params == nil || name != r.Params.TaskID:
					return nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "header mismatch: the Mcp-Name header does not match params.taskId"}
				}
			}
			ctx = context.WithValue(ctx, taskRequestKey{}, r)
		}
		return next(ctx, method, req)
	}
}

// taskRequestKey keys the task method's request in its handler's context.
type taskRequestKey struct{}

// asTask reports whether call becomes a task, and its timeout.
func (m *Manager) asTask(call *mcp.CallToolRequest) (time.Duration, bool) {
	p := call.Params
	if !m.opts.Offered() || p == nil || p.Name != "run_python" || p.RequestState != "" ||
		call.ProtocolVersion() < protocol.Stateless || !declaresTasks(call.ClientCapabilities()) {
		return 0, false
	}
	timeout, ok := m.host.CallTimeout(p.Arguments)
	if !ok || timeout <= m.opts.After {
		return 0, false
	}
	return timeout, true
}

// A taskRef is what a task method's request names: a task this replica
// holds, or one another runs (t nil), with its sandbox and nonce.
type taskRef struct {
	t  *Task
	tk handle.Task
}

// findTask returns the task a task method's request names, for the
// client that sent it, or the -32602 error to answer with.
func (m *Manager) findTask(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (taskRef, error) {
	if p == nil || p.TaskID == "" {
		return taskRef{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing params.taskId"}
	}
	var extra *mcp.RequestExtra
	if r, ok := ctx.Value(taskRequestKey{}).(*mcp.ServerRequest[*taskParams]); ok {
		extra = r.Extra
	}
	return m.lookupTask(p.TaskID, m.host.Token(extra), ss)
}

// lookupTask returns the task id names for a client with token, over the
// MCP session ss (nil without one), or the -32602 error to answer with.
func (m *Manager) lookupTask(id, token string, ss *mcp.ServerSession) (taskRef, error) {
	if strings.HasPrefix(id, sessionTaskPrefix) {
		t := m.tasks.get(id)
		if t == nil || ss == nil || t.ss != ss {
			return taskRef{}, errTask("task not found in this session (tasks of an MCP session are followed in it, and kept %v after they end)", m.opts.TTL)
		}
		if t.expired(time.Now()) {
			return taskRef{}, errTask("task has expired")
		}
		return taskRef{t: t}, nil
	}
	tk, err := m.host.Keys.CheckTask(id, token)
	switch {
	case errors.Is(err, handle.ErrMalformed):
		return taskRef{}, errTask("task not found: %q is not a task ID of this bridge", handle.RedactTask(id))
	case errors.Is(err, handle.ErrOtherKey):
		return taskRef{}, errTask("task not found: the task ID was made by another bridge (under another MCP_BRIDGE_HANDLE_KEY, or by a process that has since restarted without one)")
	case errors.Is(err, handle.ErrForged):
		return taskRef{}, errTask("task not found: the task ID is forged or altered")
	case errors.Is(err, handle.ErrForeign):
		return taskRef{}, errTask("task not found: the task ID is not yours: it belongs to another client (another person, or another bearer token)")
	case err != nil:
		return taskRef{}, errTask("%v", err)
	}
	if t := m.tasks.get(id); t != nil {
		if t.expired(time.Now()) {
			return taskRef{}, errTask("task has expired")
		}
		return taskRef{t: t, tk: tk}, nil
	}
	if !m.host.Shared {
		return taskRef{}, errTask("task not found: this bridge holds no such task (it expired, or the process that ran it has stopped)")
	}
	return taskRef{tk: tk}, nil
}

// tasksGet answers tasks/get.
func (m *Manager) tasksGet(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (*taskResult, error) {
	ref, err := m.findTask(ctx, ss, p)
	if err != nil {
		return nil, err
	}
	if ref.t != nil {
		return ref.t.view().wire("complete"), nil
	}
	v, err := m.remoteTask(ctx, p.TaskID, ref.tk)
	if err != nil {
		return nil, err
	}
	return v.wire("complete"), nil
}

// tasksUpdate answers tasks/update: the responses reach the questions
// waiting for them (responses to none are ignored).
func (m *Manager) tasksUpdate(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (*ackResult, error) {
	ref, err := m.findTask(ctx, ss, p)
	if err != nil {
		return nil, err
	}
	if ref.t != nil {
		ref.t.answer(p.InputResponses)
	} else if err := m.bringControl(ctx, p.TaskID, ref.tk, p.InputResponses, false); err != nil {
		return nil, err
	}
	return &ackResult{ResultType: "complete"}, nil
}

// tasksCancel answers tasks/cancel: the call is interrupted, the
// sandbox and its state kept; a task that ended stays as it ended.
func (m *Manager) tasksCancel(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (*ackResult, error) {
	ref, err := m.findTask(ctx, ss, p)
	if err != nil {
		return nil, err
	}
	if ref.t != nil {
		ref.t.requestCancel()
	} else if err := m.bringControl(ctx, p.TaskID, ref.tk, nil, true); err != nil {
		return nil, err
	}
	return &ackResult{ResultType: "complete"}, nil
}

// startTask runs call as a task: the handler (next) runs on its own,
// apart from the request, and the request is answered with the task once
// the handler has bound it to its sandbox (Bind), or with the handler's
// own result when it ended before (nothing ran: bad arguments, a handle
// that cannot be used, the bounds of tasks).
func (m *Manager) startTask(ctx context.Context, call *mcp.CallToolRequest, timeout time.Duration, next mcp.MethodHandler) (mcp.Result, error) {
	m.sweep.Do(func() { go m.sweepTasks() })
	t := newTask(timeout, m.opts.TTL, m.host.ResultStatus)
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.cancel = cancel
	tctx = context.WithValue(tctx, taskKey{}, t)
	type answer struct {
		res mcp.Result
		err error
	}
	out := make(chan answer, 1)
	go func() {
		defer cancel()
		res, err := next(tctx, "tools/call", call)
		select {
		case <-t.bound:
			r, _ := res.(*mcp.CallToolResult)
			if err != nil {
				t.Lost("the call failed: " + err.Error())
			} else {
				t.end(r)
			}
		default:
		}
		out <- answer{res, err}
	}()
	select {
	case <-t.bound:
		// Answered once its call holds its place in its sandbox's queue
		// (or ended), so that tasks made one after the other on one
		// sandbox run in that order.
		select {
		case <-t.placed:
		case <-out: // the handler ended: the task holds its result
		}
		return t.view().wire("task"), nil
	case a := <-out:
		select {
		case <-t.bound:
			return t.view().wire("task"), nil
		default:
		}
		return a.res, a.err
	}
}
