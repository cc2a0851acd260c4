package mcpbridge

import (
	"testing"
	"time"

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

// TestTaskResultMatchesTheSchema: a task whose call the bridge ran
// shows, on the wire, the shapes the extension's published schema
// allows: the seed, and the completed task with the call's result as
// the bridge renders it (compact output). The shapes of every status
// are checked in mcpbridge/tasks (TestTaskShapesMatchTheSchema).
func TestTaskResultMatchesTheSchema(t *testing.T) {
	t.Parallel()
	hb := serveBridge(t, Options{OutputMode: OutputCompact, Tasks: TaskOptions{After: time.Nanosecond}}, HTTPOptions{}, false)
	seed := runTaskCall(t, hb, "", map[string]any{"code": "print('hi')"})
	checkSchema(t, "CreateTaskResult", seed)
	id, _ := seed["taskId"].(string)
	done := pollTask(t, hb, "", id, taskCompleted)
	if resultText(done["result"].(map[string]any)) == "" {
		t.Fatalf("the completed task has no result text: %v", done)
	}
	checkSchema(t, "CompletedTask", done)
	checkSchema(t, "GetTaskResult", done)
}
