package mcpbridge

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
)

// schemaSeeds are input schemas as real servers send them
// (server-filesystem, server-everything, go-sdk's inferred ones) and as
// broken or hostile ones might.
var schemaSeeds = []string{
	// server-filesystem read_text_file and edit_file (zod-to-json-schema).
	`{"type":"object","properties":{"path":{"type":"string"},"tail":{"type":"number","description":"If provided, returns only the last N lines of the file"},"head":{"type":"number","description":"If provided, returns only the first N lines of the file"}},"required":["path"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`,
	`{"type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{"type":"string","description":"Text to search for - must match exactly"},"newText":{"type":"string","description":"Text to replace with"}},"required":["oldText","newText"],"additionalProperties":false}},"dryRun":{"type":"boolean","default":false,"description":"Preview changes using git-style diff format"}},"required":["path","edits"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`,
	// server-everything: echo, get-sum, annotated messages with an enum, defaults.
	`{"type":"object","properties":{"message":{"type":"string","description":"Message to echo"}},"required":["message"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`,
	`{"type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number"}},"required":["a","b"],"$schema":"http://json-schema.org/draft-07/schema#"}`,
	`{"type":"object","properties":{"messageType":{"type":"string","enum":["error","success","debug"],"description":"Type of message to demonstrate different annotation patterns"},"includeImage":{"type":"boolean","default":false,"description":"Whether to include an example image"}},"required":["messageType"]}`,
	`{"type":"object","properties":{"duration":{"type":"number","default":10,"description":"Duration of the operation in seconds"},"steps":{"type":"number","default":5,"description":"Number of steps in the operation"}}}`,
	`{"type":"object","properties":{},"$schema":"http://json-schema.org/draft-07/schema#"}`,
	`{"type":"object","properties":{"resourceId":{"type":"integer","minimum":1,"maximum":100}},"required":["resourceId"]}`,
	// go-sdk inferred (2020-12), nested objects, type lists, anyOf.
	`{"type":"object","required":["message"],"properties":{"message":{"type":"string","description":"the text to echo back"}},"additionalProperties":false}`,
	`{"type":"object","properties":{"filter":{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}}}},"limit":{"type":["integer","null"]},"mode":{"anyOf":[{"type":"string"},{"type":"number"}]}}}`,
	// Names that cannot be parameters, keywords, unicode, the proxy's own "arguments".
	`{"type":"object","properties":{"get-sum":{"type":"number"},"class":{"type":"string"},"2fa":{"type":"string"},"None":{},"True":{},"ñandú":{"type":"string"},"名前":{"type":"string"},"":{},"match":{"type":"string"},"_":{"type":"integer"},"self":{"type":"string"}},"required":["class","get-sum","match"]}`,
	`{"type":"object","properties":{"arguments":{"type":"object"},"kwargs":{"type":"string"},"args":{"type":"array"}},"required":["arguments"]}`,
	// Odd but readable: boolean and null property schemas, repeated and
	// unknown required entries, non-string types and descriptions.
	`{"properties":{"x":true,"y":false,"z":null,"w":{"type":7,"description":["d"]}},"required":["x","x","nope",3,null,{"a":1}]}`,
	`{"properties":null}`, `{}`, `null`, `{"type":"object"}`,
	// Unreadable.
	`[]`, `"schema"`, `7`, `true`, `{"properties":[]}`, `{"properties":"x"}`, `{"properties":{"a":{}},"required":"a"}`, `{"properties":{"a":{}},"required":{"a":true}}`,
}

var (
	asciiIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	annotations     = []string{"str", "int", "float", "bool", "list", "dict", "object"}
)

// FuzzToolParams feeds arbitrary JSON to the decoder of input schemas: it
// never panics, every error is errSchema, and the parameters it returns
// are what the sandbox turns into a signature without a check of its own:
// every property exactly once, the signature's names ASCII identifiers
// and no keywords, the others marked extra, required ones first and
// exactly those "required" names, the rest sorted, sizes bounded.
func FuzzToolParams(f *testing.F) {
	for _, s := range schemaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var schema any
		if json.Unmarshal(data, &schema) != nil {
			return
		}
		params, err := toolParams(schema)
		if err != nil {
			if !errors.Is(err, errSchema) {
				t.Fatalf("an error that is not errSchema: %v", err)
			}
			if params != nil {
				t.Fatalf("parameters with an error: %+v", params)
			}
			return
		}
		if problem := paramsProblem(schema, params); problem != "" {
			t.Fatalf("toolParams(%s) = %+v: %s", data, params, problem)
		}
		// The raw JSON, as a server-side tool would hold it, decodes the same.
		again, err := toolParams(json.RawMessage(data))
		if err != nil || !reflect.DeepEqual(again, params) {
			t.Fatalf("not the same from raw JSON: %+v, %v; want %+v", again, err, params)
		}
	})
}

// paramsProblem returns what is wrong with params decoded from schema, or "".
func paramsProblem(schema any, params []toolParam) string {
	m, _ := schema.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	if len(params) != len(props) || len(params) > maxToolParams {
		return "not one parameter per property, or too many"
	}
	wantRequired := map[string]bool{}
	if r, ok := m["required"].([]any); ok {
		for _, v := range r {
			if name, ok := v.(string); ok {
				wantRequired[name] = hasKey(props, name)
			}
		}
	}
	seen := map[string]bool{}
	var optional []string
	for i, p := range params {
		if seen[p.Name] || !hasKey(props, p.Name) {
			return "a name twice, or not a property: " + p.Name
		}
		seen[p.Name] = true
		if len(p.Name) > maxParamNameBytes || len(p.Description) > maxParamDescBytes || !utf8.ValidString(p.Description) {
			return "a name or description over its bound"
		}
		if !slices.Contains(annotations, p.Annotation) {
			return "an unknown annotation " + p.Annotation
		}
		switch p.Kind {
		case paramKeyword:
			if !asciiIdentifier.MatchString(p.Name) || pyname.IsKeyword(p.Name) {
				return "a signature parameter that is not an identifier: " + p.Name
			}
		case paramExtra:
			if asciiIdentifier.MatchString(p.Name) && !pyname.IsKeyword(p.Name) {
				return "an identifier left out of the signature: " + p.Name
			}
		default:
			return "an unknown kind " + p.Kind
		}
		if p.Required != wantRequired[p.Name] {
			return "required wrongly set for " + p.Name
		}
		if p.Required && i > 0 && !params[i-1].Required {
			return "a required parameter after an optional one"
		}
		if !p.Required {
			optional = append(optional, p.Name)
		}
	}
	if !slices.IsSorted(optional) {
		return "optional parameters not sorted"
	}
	return ""
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}
