package inputschema

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestObject(t *testing.T) {
	type schema struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
	}
	for _, tt := range []struct {
		in      any
		wantKey string // a key of the object, "" for none
		wantErr string
	}{
		{in: nil},
		{in: json.RawMessage("null")},
		{in: map[string]any{"type": "object"}, wantKey: "type"},
		{in: schema{Type: "object", Properties: map[string]any{"a": 1}}, wantKey: "properties"},
		{in: json.RawMessage(`[1, 2]`), wantErr: "a list, not an object"},
		{in: "text", wantErr: "a string, not an object"},
		{in: make(chan int), wantErr: "encoding it: "},
	} {
		m, err := Object(tt.in)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("Object(%#v) = %v, %v; want the error %q", tt.in, m, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("Object(%#v): %v", tt.in, err)
		case tt.wantKey == "" && m != nil, tt.wantKey != "" && m[tt.wantKey] == nil:
			t.Errorf("Object(%#v) = %v; want key %q", tt.in, m, tt.wantKey)
		}
	}
	if got := Kind(json.Number("1")); got != "number" {
		t.Errorf("Kind(json.Number) = %q", got)
	}
	if got := Kind(struct{}{}); got != `"struct {}"` {
		t.Errorf("Kind(struct{}{}) = %q", got)
	}
}
