package mcpbridge

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/render"
)

// extTasksSchema is the Tasks extension's published JSON schema,
// schema/draft/schema.json of modelcontextprotocol/ext-tasks (commit
// e434597), copied unchanged.
const extTasksSchema = "testdata/ext-tasks-schema.json"

// taskSchemaDefs returns the definitions of the extension's schema.
func taskSchemaDefs(t *testing.T) json.RawMessage {
	t.Helper()
	raw, err := os.ReadFile(extTasksSchema)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Defs
}

// checkSchema fails unless v, encoded, is valid as the schema's
// definition def.
func checkSchema(t *testing.T, defs json.RawMessage, def string, v any) {
	t.Helper()
	if err := schemaError(defs, def, v); err != nil {
		t.Error(err)
	}
}

// schemaError returns why v, encoded, is not valid as the schema's
// definition def, or nil.
func schemaError(defs json.RawMessage, def string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var instance any
	json.Unmarshal(data, &instance)
	root := []byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "#/$defs/` + def + `", "$defs": ` + string(defs) + `}`)
	var s jsonschema.Schema
	if err := json.Unmarshal(root, &s); err != nil {
		return err
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", def, err)
	}
	if err := rs.Validate(instance); err != nil {
		return fmt.Errorf("not a valid %s: %w\n%s", def, err, data)
	}
	return nil
}

// TestTaskShapesMatchTheSchema: every shape the bridge sends of a task
// (the seed, each status of tasks/get, the acknowledgements) is valid
// under the extension's published schema; a shape with a field missing
// or misnamed is not, so the check can fail.
func TestTaskShapesMatchTheSchema(t *testing.T) {
	doc := struct{ Defs json.RawMessage }{taskSchemaDefs(t)}
	now := time.Now()
	base := taskView{ID: "tk1_x", Created: now.Add(-time.Minute), Updated: now, TTL: time.Hour, Message: "running",
		Progress: &entrypoint.Progress{Progress: 1, Total: 2, Message: "half"}}
	result := render.FromSession(&entrypoint.Result{Status: entrypoint.StatusSuccess, Stdout: "hi"}, nil, nil, 0).Result(OutputCompact)
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
		checkSchema(t, doc.Defs, tc.def, v.wire("complete"))
		checkSchema(t, doc.Defs, "GetTaskResult", v.wire("complete"))
	}
	seed := base
	seed.Status = taskWorking
	checkSchema(t, doc.Defs, "CreateTaskResult", seed.wire("task"))
	checkSchema(t, doc.Defs, "UpdateTaskResult", &ackResult{ResultType: "complete"})
	checkSchema(t, doc.Defs, "CancelTaskResult", &ackResult{ResultType: "complete"})

	// The check fails a wrong shape: the seed without ttlMs, and a
	// completed task without its result.
	bad := map[string]any{}
	data, _ := json.Marshal(seed.wire("task"))
	json.Unmarshal(data, &bad)
	delete(bad, "ttlMs")
	if schemaError(doc.Defs, "CreateTaskResult", bad) == nil {
		t.Error("a CreateTaskResult without ttlMs passed the schema")
	}
	completed := base
	completed.Status = taskCompleted
	if schemaError(doc.Defs, "CompletedTask", completed.wire("complete")) == nil {
		t.Error("a completed task without its result passed the schema")
	}
}
