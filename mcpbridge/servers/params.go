package servers

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/inputschema"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/pyname"
)

// Bounds of the parameters decoded from a tool's input schema, which
// comes from a proxied server and is not trusted.
const (
	maxToolParams      = 256
	maxParamNameBytes  = 256
	maxParamDescBytes  = 4096
	truncationEllipsis = "…"
)

// Kinds of Param.
const (
	// paramKeyword is a keyword-only parameter of the tool's Python
	// signature: its name is an identifier and no keyword.
	paramKeyword = "keyword_only"
	// paramExtra is a property whose name cannot be a Python parameter
	// ("get-x", "class", "2fa", "ñ"): it is not in the signature but is
	// still accepted, through **{"get-x": 1} or arguments={"get-x": 1}.
	paramExtra = "extra"
)

// A Param is one property of a tool's input schema, decoded for the
// sandbox, which turns it into an inspect.Parameter (kind paramKeyword)
// and a line of the tool's docstring.
type Param struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Required parameters have no default; the others default to None,
	// and a None left in place is not sent to the server.
	Required bool `json:"required"`
	// Annotation is the Python type of the property's JSON type (str,
	// int, float, bool, list, dict), else "object".
	Annotation  string `json:"annotation"`
	Description string `json:"description"`
}

// jsonTypeAnnotations maps a JSON schema type to the annotation shown in
// a tool's signature.
var jsonTypeAnnotations = map[string]string{
	"string": "str", "integer": "int", "number": "float", "boolean": "bool", "array": "list", "object": "dict",
}

// isParamName reports whether name can be a Python parameter: an ASCII
// identifier that is not a keyword. Non-ASCII identifiers are left out on
// purpose: Python normalizes them (NFKC) in source, so "ﬁle=1" in a call
// would not match a parameter named "ﬁle".
func isParamName(name string) bool {
	if name == "" || len(name) > maxParamNameBytes || pyname.IsKeyword(name) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// errSchema reports an input schema ParamsOf cannot read.
var errSchema = errors.New("unusable input schema")

// ParamsOf decodes a tool's input schema into its parameters: the
// required properties in the order "required" lists them, then the
// optional ones sorted by name (the order the sandbox always saw, the
// schema being a Go map). A nil schema, or one without properties, has
// none. Entries of "required" that are not property names are ignored,
// as are repeated ones. An error (errSchema) reports a schema that is not
// an object, properties that are not an object, a "required" that is not
// a list, a name that is not UTF-8, or a schema over the bounds; the tool
// is then installed without parameters, and passes whatever it is given
// on to its server to validate.
func ParamsOf(schema any) ([]Param, error) {
	m, err := schemaObject(schema)
	if err != nil || m == nil {
		return nil, err
	}
	var props map[string]any
	switch p := m["properties"].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		props = p
	default:
		return nil, fmt.Errorf("%w: properties is a %s, not an object", errSchema, inputschema.Kind(p))
	}
	if len(props) > maxToolParams {
		return nil, fmt.Errorf("%w: %d properties, over the limit of %d", errSchema, len(props), maxToolParams)
	}
	for name := range props {
		if !utf8.ValidString(name) {
			return nil, fmt.Errorf("%w: a property name is not UTF-8: %q", errSchema, name)
		}
		if len(name) > maxParamNameBytes {
			return nil, fmt.Errorf("%w: a property name of %d bytes, over the limit of %d", errSchema, len(name), maxParamNameBytes)
		}
	}
	var required []string
	switch r := m["required"].(type) {
	case nil:
	case []any:
		for _, v := range r {
			if name, ok := v.(string); ok && !slices.Contains(required, name) {
				if _, ok := props[name]; ok {
					required = append(required, name)
				}
			}
		}
	default:
		return nil, fmt.Errorf("%w: required is a %s, not a list", errSchema, inputschema.Kind(r))
	}
	optional := make([]string, 0, len(props)-len(required))
	for name := range props {
		if !slices.Contains(required, name) {
			optional = append(optional, name)
		}
	}
	slices.Sort(optional)
	params := make([]Param, 0, len(props))
	for i, name := range append(required, optional...) {
		p := Param{Name: name, Kind: paramExtra, Required: i < len(required), Annotation: "object"}
		if isParamName(name) {
			p.Kind = paramKeyword
		}
		if spec, ok := props[name].(map[string]any); ok {
			if t, ok := spec["type"].(string); ok && jsonTypeAnnotations[t] != "" {
				p.Annotation = jsonTypeAnnotations[t]
			}
			if d, ok := spec["description"].(string); ok {
				p.Description = truncateUTF8(d, maxParamDescBytes)
			}
		}
		params = append(params, p)
	}
	return params, nil
}

// schemaObject returns schema as a JSON object, nil for no schema.
func schemaObject(schema any) (map[string]any, error) {
	m, err := inputschema.Object(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errSchema, err)
	}
	return m, nil
}

// truncateUTF8 returns s cut to at most max bytes on a rune boundary,
// ending with an ellipsis when it was cut.
func truncateUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len(truncationEllipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncationEllipsis
}
