package mcpbridge

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// extTasksSchema is the Tasks extension's published JSON schema,
// schema/draft/schema.json of modelcontextprotocol/ext-tasks (commit
// e434597), copied unchanged.
const extTasksSchema = "tasks/testdata/ext-tasks-schema.json"

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

// TestTaskResultMatchesTheSchema: a task whose call the bridge ran
// shows, on the wire, the shapes the extension's published schema
// allows: the seed, and the completed task with the call's result as
// the bridge renders it (compact output). The shapes of every status
// are checked in mcpbridge/tasks (TestTaskShapesMatchTheSchema).
func TestTaskResultMatchesTheSchema(t *testing.T) {
	t.Parallel()
	defs := taskSchemaDefs(t)
	hb := serveBridge(t, Options{OutputMode: OutputCompact, Tasks: TaskOptions{After: time.Nanosecond}}, HTTPOptions{}, false)
	seed := runTaskCall(t, hb, "", map[string]any{"code": "print('hi')"})
	checkSchema(t, defs, "CreateTaskResult", seed)
	id, _ := seed["taskId"].(string)
	done := pollTask(t, hb, "", id, taskCompleted)
	if resultText(done["result"].(map[string]any)) == "" {
		t.Fatalf("the completed task has no result text: %v", done)
	}
	checkSchema(t, defs, "CompletedTask", done)
	checkSchema(t, defs, "GetTaskResult", done)
}
