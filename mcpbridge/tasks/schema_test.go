package tasks

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/taskschema"
)

// checkSchema fails unless v, encoded, is valid as the Tasks extension's
// definition def.
func checkSchema(t *testing.T, def string, v any) {
	t.Helper()
	if err := taskschema.Error(def, v); err != nil {
		t.Error(err)
	}
}

// TestTaskShapesMatchTheSchema: every shape the bridge sends of a task
// (the seed, each status of tasks/get, the acknowledgements) is valid
// under the extension's published schema; a shape with a field missing
// or misnamed is not, so the check can fail.
func TestTaskShapesMatchTheSchema(t *testing.T) {
	now := time.Now()
	base := taskView{ID: "tk1_x", Created: now.Add(-time.Minute), Updated: now, TTL: time.Hour, Message: "running",
		Progress: &entrypoint.Progress{Progress: 1, Total: 2, Message: "half"}}
	// A call's result as the bridge renders a successful one.
	result := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}},
		StructuredContent: map[string]any{"stdout": []string{"hi"}}}
	for _, tc := range []struct {
		def, status string
		set         func(*taskView)
	}{
		{"WorkingTask", taskWorking, nil},
		{"InputRequiredTask", taskInputRequired, func(v *taskView) {
			v.Inputs = mcp.InputRequestMap{"confirm-1": &mcp.ElicitParams{Message: "Allow?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}}
		}},
		{"CompletedTask", taskCompleted, func(v *taskView) { v.Result = result }},
		{"FailedTask", taskFailed, func(v *taskView) { v.Error = &taskError{Code: -32603, Message: "lost"} }},
		{"CancelledTask", taskCancelled, nil},
	} {
		v := base
		v.Status = tc.status
		if tc.set != nil {
			tc.set(&v)
		}
		checkSchema(t, tc.def, v.wire("complete"))
		checkSchema(t, "GetTaskResult", v.wire("complete"))
	}
	seed := base
	seed.Status = taskWorking
	checkSchema(t, "CreateTaskResult", seed.wire("task"))
	checkSchema(t, "UpdateTaskResult", &ackResult{ResultType: "complete"})
	checkSchema(t, "CancelTaskResult", &ackResult{ResultType: "complete"})

	// The check fails a wrong shape: the seed without ttlMs, and a
	// completed task without its result.
	bad := map[string]any{}
	data, _ := json.Marshal(seed.wire("task"))
	json.Unmarshal(data, &bad)
	delete(bad, "ttlMs")
	if taskschema.Error("CreateTaskResult", bad) == nil {
		t.Error("a CreateTaskResult without ttlMs passed the schema")
	}
	completed := base
	completed.Status = taskCompleted
	if taskschema.Error("CompletedTask", completed.wire("complete")) == nil {
		t.Error("a completed task without its result passed the schema")
	}
}
