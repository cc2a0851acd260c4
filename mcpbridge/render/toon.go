package render

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/moonrhythm/toon"
)

// The text of MCP_BRIDGE_OUTPUT_MODE=toon: the result's payload in TOON
// (Token-Oriented Object Notation, https://github.com/toon-format/spec) in
// a fenced block, as the original renders it with its TOON encoder
// (toon_format's encode). The encoder is github.com/moonrhythm/toon, the
// Go encoder that conforms to the spec (v3.3, whose official encoder
// fixtures it passes) among those on the Go module proxy: it keeps the
// payload's key order (its JSON field order), renders stdout and stderr
// as inline arrays and the files out as a table, quotes by the spec's
// rules, and folds no keys. It predates spec v4.0, which adds that a
// string beginning with "#" is quoted: such a string (a printed comment)
// stays unquoted here, which a v4 decoder still reads as the same string
// in every place this payload puts one (a value after "key: ", an element
// of an inline array); the one place v4 reads a line beginning with "#"
// as a comment, a table row's first cell, holds a file's path, which
// begins with /workspace/out.

// A toonPayload is the payload the original renders in toon mode, as
// text and as structured content alike: status and summary always, the
// exit code of a success (0) too, then the rest of payload in its order.
type toonPayload struct {
	Status   string `json:"status"`
	Summary  string `json:"summary"`
	ExitCode *int   `json:"exitCode,omitempty"`
	// payload's own status, summary and exitCode are hidden by the
	// fields above (encoding/json takes the shallower of two fields of
	// one name).
	payload
}

// toonPayload returns the outcome's payload for toon mode.
func (o Outcome) toonPayload() toonPayload {
	p := toonPayload{Status: o.status, Summary: o.summary, payload: o.payload()}
	if o.exitCode != 0 || o.status == statusSuccess {
		code := o.exitCode
		p.ExitCode = &code
	}
	return p
}

// toonText renders p as a fenced TOON block. Should the encoder fail, it
// is a fenced JSON block (indented, keys sorted: the original's
// json.dumps(payload, indent=2, sort_keys=True)), the original's fallback
// when its encoder is missing or fails.
func toonText(p toonPayload) string {
	body, err := toon.Marshal(p)
	if err != nil {
		return jsonBlock(p)
	}
	if text := strings.TrimRight(string(body), "\n"); text != "" {
		return "```toon\n" + text + "\n```"
	}
	return "```toon\n```"
}

// jsonBlock renders v as a fenced JSON block, indented by two spaces with
// its keys sorted, and, like Python's json.dumps, <, > and & as they are.
func jsonBlock(v any) string {
	var sorted any
	data, err := json.Marshal(v)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		err = dec.Decode(&sorted)
	}
	if err != nil {
		sorted = map[string]string{"error": err.Error()}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(sorted)
	return "```json\n" + strings.TrimRight(b.String(), "\n") + "\n```"
}
