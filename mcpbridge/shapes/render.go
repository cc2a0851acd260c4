// Package shapes renders what a tool returns as compact display text in
// Python typing style, such as {"items": list[{"id": int}], "next"?: str
// | None}: from a declared output schema (Render), or from the results a
// tool was seen to return (an Observed shape). The text is for a model
// to read, not importable types; it is bounded in depth, fields and
// length, with "…" where it was cut.
package shapes

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Bounds of a rendered shape.
const (
	// MaxDepth is how deep objects and lists are shown; deeper is "…".
	MaxDepth = 6
	// MaxFields is how many keys of one object are shown; the rest are
	// counted in a "…: +N more" entry.
	MaxFields = 24
	// MaxText bounds the whole text, in bytes; longer is cut with " …".
	MaxText = 2000
	// maxLiterals bounds the values of one enum shown.
	maxLiterals = 8
	// maxUnion bounds the members of one union shown.
	maxUnion = 6
)

// ErrUnrenderable reports an output schema that cannot be shown.
var ErrUnrenderable = errors.New("the output schema cannot be shown")

// Render returns the shape of the values the JSON schema describes: a
// decoded schema (map[string]any or bool), or one that encodes as JSON.
// References ($ref to #/$defs/… or #/definitions/…) are followed; one met
// again inside itself is shown by its name.
func Render(schema any) (string, error) {
	root, err := asMap(schema)
	if err != nil {
		return "", err
	}
	r := &renderer{root: root}
	text := r.node(root, 0)
	if r.err != nil {
		return "", r.err
	}
	return Cut(text), nil
}

// Cut bounds text to MaxText bytes, at a rune boundary, marked " …".
func Cut(text string) string {
	if len(text) <= MaxText {
		return text
	}
	cut := MaxText
	for cut > 0 && !isRuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + " …"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// asMap returns schema as a decoded JSON object.
func asMap(schema any) (map[string]any, error) {
	switch s := schema.(type) {
	case nil:
		return nil, fmt.Errorf("%w: there is none", ErrUnrenderable)
	case map[string]any:
		return s, nil
	}
	data, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnrenderable, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrUnrenderable)
	}
	return m, nil
}

// A renderer renders the schemas of one root.
type renderer struct {
	root  map[string]any
	refs  []string // the references being followed, outermost first
	err   error
	nodes int
}

// maxNodes bounds the schemas one rendering visits: a schema of many
// references to large definitions is cut, not expanded without end.
const maxNodes = 2000

// node renders the schema s at depth.
func (r *renderer) node(s any, depth int) string {
	r.nodes++
	if r.nodes > maxNodes {
		return "…"
	}
	switch v := s.(type) {
	case bool:
		if v {
			return "Any"
		}
		return "Never"
	case map[string]any:
		return r.object(v, depth)
	case nil:
		return "Any"
	}
	if r.err == nil {
		r.err = fmt.Errorf("%w: a schema is a %T, not an object", ErrUnrenderable, s)
	}
	return "Any"
}

// object renders the schema object s.
func (r *renderer) object(s map[string]any, depth int) string {
	if ref, ok := s["$ref"].(string); ok {
		return r.ref(ref, depth)
	}
	if v, ok := s["const"]; ok {
		return "Literal[" + literal(v) + "]"
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return literals(e)
	}
	var members []string
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			for _, a := range alts {
				members = append(members, r.node(a, depth))
			}
		}
	}
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 {
		members = append(members, r.allOf(s, all, depth))
	} else if len(members) == 0 || hasType(s) {
		members = append(members, r.typed(s, depth))
	}
	if nullable, _ := s["nullable"].(bool); nullable {
		members = append(members, "None")
	}
	return union(members)
}

// hasType reports whether s says more than its alternatives: a type or
// properties.
func hasType(s map[string]any) bool {
	_, t := s["type"]
	_, p := s["properties"]
	return t || p
}

// allOf renders an allOf: the objects' properties together, else the
// first member.
func (r *renderer) allOf(s map[string]any, all []any, depth int) string {
	merged := map[string]any{"type": "object"}
	props := map[string]any{}
	var required []any
	for _, m := range append([]any{s}, all...) {
		mm, ok := m.(map[string]any)
		if !ok {
			return r.node(all[0], depth)
		}
		if ref, ok := mm["$ref"].(string); ok {
			if def, ok := r.lookup(ref); ok {
				mm = def
			}
		}
		p, _ := mm["properties"].(map[string]any)
		for k, v := range p {
			props[k] = v
		}
		req, _ := mm["required"].([]any)
		required = append(required, req...)
	}
	if len(props) == 0 {
		return r.node(all[0], depth)
	}
	merged["properties"], merged["required"] = props, required
	return r.typed(merged, depth)
}

// ref renders a reference into the root's definitions.
func (r *renderer) ref(ref string, depth int) string {
	name := ref[strings.LastIndexByte(ref, '/')+1:]
	if slices.Contains(r.refs, ref) {
		return name // recursive: shown by name
	}
	def, ok := r.lookup(ref)
	if !ok {
		return "Any"
	}
	r.refs = append(r.refs, ref)
	defer func() { r.refs = r.refs[:len(r.refs)-1] }()
	return r.node(def, depth)
}

// lookup finds the definition ref names: "#", "#/$defs/X",
// "#/definitions/X" (JSON pointer escapes decoded).
func (r *renderer) lookup(ref string) (map[string]any, bool) {
	if ref == "#" {
		return r.root, true
	}
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var cur any = r.root
	for part := range strings.SplitSeq(path, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = m[part]
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// typed renders s by its type (a name or a list of names), or by what
// it has (properties, items) when it names none.
func (r *renderer) typed(s map[string]any, depth int) string {
	var types []string
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if n, ok := x.(string); ok {
				types = append(types, n)
			}
		}
	}
	if len(types) == 0 {
		switch {
		case s["properties"] != nil || s["additionalProperties"] != nil:
			types = []string{"object"}
		case s["items"] != nil || s["prefixItems"] != nil:
			types = []string{"array"}
		default:
			return "Any"
		}
	}
	var out []string
	for _, t := range types {
		switch t {
		case "string":
			out = append(out, "str")
		case "integer":
			out = append(out, "int")
		case "number":
			out = append(out, "float")
		case "boolean":
			out = append(out, "bool")
		case "null":
			out = append(out, "None")
		case "array":
			out = append(out, r.array(s, depth))
		case "object":
			out = append(out, r.fields(s, depth))
		default:
			out = append(out, "Any")
		}
	}
	return union(out)
}

// array renders an array schema: list[T], or tuple[A, B] for a schema of
// positions (prefixItems, or items as a list).
func (r *renderer) array(s map[string]any, depth int) string {
	if depth >= MaxDepth {
		return "list[…]"
	}
	pos, ok := s["prefixItems"].([]any)
	if !ok {
		pos, ok = s["items"].([]any)
	}
	if ok {
		var parts []string
		for _, p := range pos {
			parts = append(parts, r.node(p, depth+1))
		}
		return "tuple[" + strings.Join(parts, ", ") + "]"
	}
	if items, ok := s["items"]; ok {
		return "list[" + r.node(items, depth+1) + "]"
	}
	return "list[Any]"
}

// fields renders an object schema: its properties, the required ones
// plain and the others marked "?", in the schema's order where it is
// known (sorted otherwise: a decoded JSON object keeps none); or
// dict[str, T] for one of additional properties only.
func (r *renderer) fields(s map[string]any, depth int) string {
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		switch ap := s["additionalProperties"].(type) {
		case map[string]any:
			if depth >= MaxDepth {
				return "dict[str, …]"
			}
			return "dict[str, " + r.node(ap, depth+1) + "]"
		case bool:
			if !ap {
				return "{}"
			}
		}
		return "dict[str, Any]"
	}
	if depth >= MaxDepth {
		return "{…}"
	}
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, k := range req {
			if name, ok := k.(string); ok {
				required[name] = true
			}
		}
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	return object(keys, func(k string) bool { return required[k] }, func(k string) string { return r.node(props[k], depth+1) })
}

// Key renders an object key a server chose: quoted and escaped as JSON,
// at most 64 bytes shown.
func Key(k string) string {
	if len(k) > 64 {
		cut := 64
		for cut > 0 && !isRuneStart(k[cut]) {
			cut--
		}
		k = k[:cut] + "…"
	}
	return strconv.Quote(k)
}

// literals renders an enum: Literal[...] of at most maxLiterals values.
func literals(values []any) string {
	var parts []string
	for i, v := range values {
		if i == maxLiterals {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, literal(v))
	}
	return "Literal[" + strings.Join(parts, ", ") + "]"
}

// literal renders one enum value as Python would write it.
func literal(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		if len(x) > 64 {
			x = x[:64] + "…"
		}
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	data, _ := json.Marshal(v)
	if len(data) > 64 {
		return "…"
	}
	return string(data)
}

// union joins members with " | ", each once, None last, at most
// maxUnion shown.
func union(members []string) string {
	var out []string
	none := false
	for _, m := range members {
		for _, part := range splitUnion(m) {
			switch {
			case part == "None":
				none = true
			case part == "Any":
				return "Any"
			case !slices.Contains(out, part):
				out = append(out, part)
			}
		}
	}
	if len(out) > maxUnion {
		out = append(out[:maxUnion], "…")
	}
	if none {
		out = append(out, "None")
	}
	if len(out) == 0 {
		return "Any"
	}
	return strings.Join(out, " | ")
}

// splitUnion splits a rendered type at its outermost " | ", leaving
// those inside brackets and quoted keys alone.
func splitUnion(t string) []string {
	var parts []string
	depth, start, quoted := 0, 0, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '[' || c == '{' || c == '(':
			depth++
		case c == ']' || c == '}' || c == ')':
			depth--
		case depth == 0 && strings.HasPrefix(t[i:], " | "):
			parts = append(parts, t[start:i])
			start = i + 3
			i += 2
		}
	}
	return append(parts, t[start:])
}

// object renders an object of keys: those always there (required, or
// seen in every result) first, each group sorted, the others marked "?",
// at most MaxFields shown; value renders a key's value.
func object(keys []string, always func(string) bool, value func(string) string) string {
	slices.SortFunc(keys, func(a, b string) int {
		if always(a) != always(b) {
			if always(a) {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for i, k := range keys {
		if i == MaxFields {
			parts = append(parts, fmt.Sprintf("…: +%d more", len(keys)-MaxFields))
			break
		}
		mark := ""
		if !always(k) {
			mark = "?"
		}
		parts = append(parts, Key(k)+mark+": "+value(k))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
