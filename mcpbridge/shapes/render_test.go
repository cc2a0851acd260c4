package shapes

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/outputschemas/corpus.golden")

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// TestRender: every construct of a schema renders as its Python typing
// text; references are followed, a recursive one shown by name.
func TestRender(t *testing.T) {
	for _, tt := range []struct{ name, schema, want string }{
		{"scalars", `{"type":"object","properties":{"s":{"type":"string"},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"},"z":{"type":"null"}},"required":["s","i","n","b","z"]}`,
			`{"b": bool, "i": int, "n": float, "s": str, "z": None}`},
		{"optional keys last, marked", `{"type":"object","properties":{"next":{"type":"string"},"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"title":{"type":"string"}},"required":["id","title"]}}},"required":["items"]}`,
			`{"items": list[{"id": int, "title": str}], "next"?: str}`},
		{"nullable forms", `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"anyOf":[{"type":"integer"},{"type":"null"}]},"c":{"type":"string","nullable":true}},"required":["a","b","c"]}`,
			`{"a": str | None, "b": int | None, "c": str | None}`},
		{"enum and const", `{"type":"object","properties":{"state":{"enum":["open","closed",null]},"kind":{"const":"issue"},"n":{"enum":[1,2.5,true]}},"required":["state","kind","n"]}`,
			`{"kind": Literal["issue"], "n": Literal[1, 2.5, True], "state": Literal["open", "closed", None]}`},
		{"oneOf", `{"oneOf":[{"type":"object","properties":{"ok":{"const":true}},"required":["ok"]},{"type":"object","properties":{"error":{"type":"string"}},"required":["error"]}]}`,
			`{"ok": Literal[True]} | {"error": str}`},
		{"refs", `{"type":"object","properties":{"user":{"$ref":"#/$defs/User"},"old":{"$ref":"#/definitions/Old"}},"required":["user","old"],"$defs":{"User":{"type":"object","properties":{"login":{"type":"string"}},"required":["login"]}},"definitions":{"Old":{"type":"integer"}}}`,
			`{"old": int, "user": {"login": str}}`},
		{"recursive ref", `{"$ref":"#/$defs/Node","$defs":{"Node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["name","children"]}}}`,
			`{"children": list[Node], "name": str}`},
		{"dicts", `{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"}},"meta":{"type":"object"},"none":{"type":"object","additionalProperties":false}},"required":["labels","meta","none"]}`,
			`{"labels": dict[str, str], "meta": dict[str, Any], "none": {}}`},
		{"tuple", `{"type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"number"},{"type":"number"}]}},"required":["p"]}`,
			`{"p": tuple[float, float]}`},
		{"allOf merges objects", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"$ref":"#/$defs/B"}],"$defs":{"B":{"type":"object","properties":{"b":{"type":"integer"}}}}}`,
			`{"a": str, "b"?: int}`},
		{"nested union stays whole", `{"type":"object","properties":{"xs":{"type":"array","items":{"type":["integer","null"]}}},"required":["xs"]}`,
			`{"xs": list[int | None]}`},
		{"keys are quoted and escaped", `{"type":"object","properties":{"a\"b | c":{"type":"string"}},"required":["a\"b | c"]}`,
			`{"a\"b | c": str}`},
		{"true and empty schemas", `{"type":"object","properties":{"x":true,"y":{}},"required":["x","y"]}`, `{"x": Any, "y": Any}`},
	} {
		got, err := Render(decode(t, tt.schema))
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v\nwant %q", tt.name, got, err, tt.want)
		}
	}
}

// TestRenderBounds: depth, fields, enum values and length are cut with a
// visible marker; a schema that is not an object is an error, never a
// panic.
func TestRenderBounds(t *testing.T) {
	deep := `{"type":"string"}`
	for range 10 {
		deep = `{"type":"object","properties":{"x":` + deep + `},"required":["x"]}`
	}
	got, _ := Render(decode(t, deep))
	if strings.Count(got, "{") != MaxDepth+1 || !strings.Contains(got, "{…}") {
		t.Errorf("10 levels: %s", got)
	}
	var props []string
	for i := range 40 {
		props = append(props, fmt.Sprintf(`"f%02d":{"type":"integer"}`, i))
	}
	got, _ = Render(decode(t, `{"type":"object","properties":{`+strings.Join(props, ",")+`}}`))
	if !strings.HasSuffix(got, `"f23"?: int, …: +16 more}`) {
		t.Errorf("40 fields: %s", got)
	}
	var values []string
	for i := range 20 {
		values = append(values, fmt.Sprintf(`"v%d"`, i))
	}
	got, _ = Render(decode(t, `{"enum":[`+strings.Join(values, ",")+`]}`))
	if got != `Literal["v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", …]` {
		t.Errorf("20 values: %s", got)
	}
	var wide []string
	for i := range 24 {
		wide = append(wide, fmt.Sprintf(`"%s%02d":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"}}}`, strings.Repeat("k", 60), i))
	}
	got, _ = Render(decode(t, `{"type":"object","properties":{`+strings.Join(wide, ",")+`}}`))
	if len(got) > MaxText+4 || !strings.HasSuffix(got, " …") {
		t.Errorf("a long shape: %d bytes, ends %q", len(got), got[len(got)-10:])
	}
	for _, bad := range []any{nil, "a string", 42.0, []any{1.0}} {
		if _, err := Render(bad); !errors.Is(err, ErrUnrenderable) {
			t.Errorf("Render(%v): %v", bad, err)
		}
	}
	if got, err := Render(decode(t, `{"type":"object","properties":{"x":"not a schema"}}`)); !errors.Is(err, ErrUnrenderable) {
		t.Errorf("a property that is not a schema: %q %v", got, err)
	}
	// A reference to a missing definition, or outside the document.
	if got, err := Render(decode(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/Missing"},"b":{"$ref":"https://example.org/s.json"}},"required":["a","b"]}`)); err != nil || got != `{"a": Any, "b": Any}` {
		t.Errorf("unresolvable references: %q %v", got, err)
	}
}

// TestRenderCorpus renders the output schemas of real servers
// (testdata/outputschemas) against corpus.golden.
func TestRenderCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "outputschemas", "*.json"))
	if len(files) == 0 {
		t.Fatal("no corpus")
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Tools []struct {
				Name         string `json:"name"`
				OutputSchema any    `json:"outputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tool := range c.Tools {
			got, err := Render(tool.OutputSchema)
			if err != nil {
				t.Errorf("%s %s: %v", f, tool.Name, err)
			}
			raw, _ := json.Marshal(tool.OutputSchema)
			fmt.Fprintf(&b, "%s %s (%d bytes of schema, %d of shape)\n\t%s\n", filepath.Base(f), tool.Name, len(raw), len(got), got)
		}
	}
	golden := filepath.Join("testdata", "outputschemas", "corpus.golden")
	if *update {
		os.WriteFile(golden, []byte(b.String()), 0o644)
	}
	want, _ := os.ReadFile(golden)
	if b.String() != string(want) {
		t.Errorf("the corpus renders otherwise (-update rewrites %s):\n%s", golden, b.String())
	}
}
