// Package taskschema checks a value against a definition of the Tasks
// extension's published JSON schema, for the tests of the packages that
// send the extension's shapes (mcpbridge, mcpbridge/tasks). The schema is
// schema/draft/schema.json of modelcontextprotocol/ext-tasks (commit
// e434597), copied unchanged.
package taskschema

import (
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

//go:embed ext-tasks-schema.json
var published []byte

// Error returns why v, encoded as JSON, is not valid as the schema's
// definition def (CreateTaskResult, CompletedTask, …), or nil.
func Error(def string, v any) error {
	var doc struct {
		Defs json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(published, &doc); err != nil {
		return fmt.Errorf("reading the published schema: %w", err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var instance any
	if err := json.Unmarshal(data, &instance); err != nil {
		return err
	}
	root := []byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "#/$defs/` + def + `", "$defs": ` + string(doc.Defs) + `}`)
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
