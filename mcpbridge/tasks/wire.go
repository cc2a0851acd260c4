package tasks

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The shapes of the Tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663) as the bridge shows them: a run_python call of a client that
// declares the extension, with a timeout above Options.After, is
// answered at once with a task the client polls (tasks/get), answers
// (tasks/update) and cancels (tasks/cancel).

// Extension names the extension in capabilities.
const Extension = "io.modelcontextprotocol/tasks"

// The statuses of a task.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// taskEnded reports whether a task's status is terminal.
func taskEnded(status string) bool {
	return status == taskCompleted || status == taskFailed || status == taskCancelled
}

// A taskError is the JSON-RPC error of a failed task.
type taskError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// A taskView is what a client is shown of a task at one time; it is also
// the record any replica reads from the sandbox.
type taskView struct {
	ID       string               `json:"id"`
	Status   string               `json:"status"`
	Message  string               `json:"message,omitempty"`
	Created  time.Time            `json:"created"`
	Updated  time.Time            `json:"updated"`
	TTL      time.Duration        `json:"ttl"` // from creation
	Inputs   mcp.InputRequestMap  `json:"inputs,omitempty"`
	Result   *mcp.CallToolResult  `json:"result,omitempty"`
	Error    *taskError           `json:"error,omitempty"`
	Progress *entrypoint.Progress `json:"progress,omitempty"`
	Beat     time.Time            `json:"beat,omitzero"` // when its replica last wrote it
	// CtlAck is the highest sequence of "ctl" its replica applied: the
	// acknowledgement the replica that wrote a ctl waits for (ack.go).
	CtlAck int64 `json:"ctl_ack,omitempty"`
}

// Bounds of what a task reports.
const (
	// taskPoll is the poll interval a task suggests.
	taskPoll = time.Second
	// taskTailBytes and taskTailLines bound the output a status message
	// carries: its newest lines.
	taskTailBytes = 512
	taskTailLines = 5
)

// The methods of the Tasks extension. tasks/result and tasks/list (of
// the 2025-11-25 experiment) are not among them: unregistered, they are
// answered as unknown methods.
const (
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
)

// sessionTaskPrefix begins the ID of a task of an MCP session (stdio),
// which only that session can follow; a handle's task IDs are handle.TaskPrefix's.
const sessionTaskPrefix = "tks_"

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string               `json:"taskId"`
	InputResponses mcp.InputResponseMap `json:"inputResponses,omitempty"`
}

// A taskResult is a task as the extension shows it: the result of
// tasks/get (resultType "complete") or, in its seed state, of the
// tools/call that created it (resultType "task").
type taskResult struct {
	mcp.ResultBase
	ResultType     string              `json:"resultType"`
	TaskID         string              `json:"taskId"`
	Status         string              `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          int64               `json:"ttlMs"`
	PollIntervalMs int64               `json:"pollIntervalMs,omitempty"`
	InputRequests  mcp.InputRequestMap `json:"inputRequests,omitempty"`
	Result         *mcp.CallToolResult `json:"result,omitempty"`
	Error          *taskError          `json:"error,omitempty"`
}

// ackResult is the empty acknowledgement of tasks/update and tasks/cancel.
type ackResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// progressMetaKey carries, in a task's _meta, the code's latest
// report_progress figures.
const progressMetaKey = "dev.mcp-code-exec/progress"

// wire returns v as the extension shows it, with resultType.
func (v taskView) wire(resultType string) *taskResult {
	r := &taskResult{ResultType: resultType, TaskID: v.ID, Status: v.Status, StatusMessage: v.Message,
		CreatedAt: v.Created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: v.Updated.UTC().Format(time.RFC3339Nano),
		TTLMs: v.TTL.Milliseconds(), PollIntervalMs: taskPoll.Milliseconds()}
	if resultType == "task" {
		return r // the seed state: no payload
	}
	switch v.Status {
	case taskInputRequired:
		r.InputRequests = v.Inputs
	case taskCompleted:
		r.Result = v.Result
	case taskFailed:
		r.Error = v.Error
	}
	if p := v.Progress; p != nil {
		m := map[string]any{"progress": p.Progress}
		if p.Total > 0 {
			m["total"] = p.Total
		}
		if p.Message != "" {
			m["message"] = p.Message
		}
		r.Meta = mcp.Meta{progressMetaKey: m}
	}
	return r
}

// declaresTasks reports whether a request's client declares the
// extension (per request, protocol 2026-07-28).
func declaresTasks(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[Extension]
	return ok
}

// errMissingTasks is the error of a task method from a client that does
// not declare the extension.
func errMissingTasks() error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{Extension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "Missing required client capability: the tasks extension (" + Extension + ")", Data: data}
}

// errTask is the error of a task ID that names no task this client can
// follow.
func errTask(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: " + fmt.Sprintf(format, args...)}
}

// newSessionTaskID returns the ID of a task of an MCP session.
func newSessionTaskID() string { return sessionTaskPrefix + rand.Text() }
