package servers

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestToolParams(t *testing.T) {
	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	// read_text_file of server-filesystem: required first, then sorted.
	got, err := ParamsOf(decode(schemaSeeds(t)[0]))
	want := []Param{
		{Name: "path", Kind: paramKeyword, Required: true, Annotation: "str"},
		{Name: "head", Kind: paramKeyword, Annotation: "float", Description: "If provided, returns only the first N lines of the file"},
		{Name: "tail", Kind: paramKeyword, Annotation: "float", Description: "If provided, returns only the last N lines of the file"},
	}
	if err != nil || !equalParams(got, want) {
		t.Fatalf("read_text_file: %+v, %v", got, err)
	}
	// Odd but readable schemas decode; repeated and unknown required entries are dropped.
	got, err = ParamsOf(decode(`{"properties":{"x":true,"y":{"type":["string","null"],"description":7}},"required":["y","y","nope",3]}`))
	want = []Param{
		{Name: "y", Kind: paramKeyword, Required: true, Annotation: "object"},
		{Name: "x", Kind: paramKeyword, Annotation: "object"},
	}
	if err != nil || !equalParams(got, want) {
		t.Fatalf("odd schema: %+v, %v", got, err)
	}
	// No schema, or no properties: no parameters and no error.
	for _, s := range []any{nil, decode(`{}`), decode(`{"type":"object","properties":null}`), json.RawMessage(`null`)} {
		if got, err := ParamsOf(s); err != nil || len(got) != 0 {
			t.Fatalf("ParamsOf(%v) = %+v, %v", s, got, err)
		}
	}
	// Unreadable schemas and schemas over the bounds are errors.
	many := map[string]any{}
	for i := range maxToolParams + 1 {
		many["p"+strconv.Itoa(i)] = map[string]any{}
	}
	for _, s := range []any{
		decode(`[]`), decode(`"x"`), decode(`{"properties":[]}`), decode(`{"properties":{"a":{}},"required":"a"}`),
		map[string]any{"properties": many},
		map[string]any{"properties": map[string]any{strings.Repeat("n", maxParamNameBytes+1): map[string]any{}}},
		map[string]any{"properties": map[string]any{"bad\xff": map[string]any{}}},
		json.RawMessage(`{`),
	} {
		if got, err := ParamsOf(s); !errors.Is(err, errSchema) || got != nil {
			t.Fatalf("ParamsOf(%.80v) = %+v, %v; want errSchema", s, got, err)
		}
	}
	// A long description is cut on a rune boundary.
	long := strings.Repeat("é", maxParamDescBytes)
	got, err = ParamsOf(map[string]any{"properties": map[string]any{"a": map[string]any{"description": long}}})
	if err != nil || len(got) != 1 || len(got[0].Description) > maxParamDescBytes || !strings.HasSuffix(got[0].Description, "é…") {
		t.Fatalf("long description: %v, %v", got, err)
	}
}

func equalParams(a, b []Param) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
