// Package inputschema reads a tool's input schema as the go-sdk hands it
// over: a decoded JSON value, a *jsonschema.Schema, or anything else that
// encodes to JSON. The parameters of proxied tools (mcpbridge/servers) and
// the tool search's index (mcpbridge/toolsearch) both read it here.
package inputschema

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Object returns schema as a JSON object: nil with no error for no schema
// (nil, or JSON null), else an error that says why it is not an object.
func Object(schema any) (map[string]any, error) {
	switch s := schema.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return s, nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("encoding it: %v", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("decoding it: %v", err)
	}
	switch s := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return s, nil
	default:
		return nil, fmt.Errorf("a %s, not an object", Kind(s))
	}
}

// Kind names the JSON kind of a decoded value.
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return strconv.Quote(fmt.Sprintf("%T", v))
}
