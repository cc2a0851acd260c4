package servers

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
)

// schemaSeeds returns the input schemas of testdata/schema_seeds.txt:
// as real servers send them (server-filesystem, server-everything, go-sdk's
// inferred ones) and as broken or hostile ones might.
func schemaSeeds(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "schema_seeds.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var seeds []string
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			seeds = append(seeds, line)
		}
	}
	return seeds
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
	for _, s := range schemaSeeds(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var schema any
		if json.Unmarshal(data, &schema) != nil {
			return
		}
		params, err := ParamsOf(schema)
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
			t.Fatalf("ParamsOf(%s) = %+v: %s", data, params, problem)
		}
		// The raw JSON, as a server-side tool would hold it, decodes the same.
		again, err := ParamsOf(json.RawMessage(data))
		if err != nil || !reflect.DeepEqual(again, params) {
			t.Fatalf("not the same from raw JSON: %+v, %v; want %+v", again, err, params)
		}
	})
}

// paramsProblem returns what is wrong with params decoded from schema, or "".
func paramsProblem(schema any, params []Param) string {
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
