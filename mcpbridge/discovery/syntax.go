package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// utf8BOM is the byte order mark some Windows editors put first.
var utf8BOM = []byte("\xef\xbb\xbf")

// PlainJSON returns data, JSON with comments and trailing commas as
// discovery reads it (VS Code's settings and mcp.json), as plain JSON:
// the byte order mark dropped, every comment and trailing comma replaced
// by spaces (newlines kept), so that every other byte keeps its line and
// column. Plain JSON comes back unchanged but for the byte order mark.
func PlainJSON(data []byte) []byte {
	return stripTrailingCommas(stripJSONComments(bytes.TrimPrefix(data, utf8BOM)))
}

// stripJSONComments replaces // and /* */ comments outside strings with
// whitespace, as VS Code's settings allow them: every byte of a comment
// becomes a space, but its newlines stay, so that "1/**/2" stays two
// tokens and every byte keeps its offset (an error's line and column are
// the file's). An unterminated block comment runs to the end.
func stripJSONComments(b []byte) []byte {
	out := make([]byte, 0, len(b))
	var str jsonStrings
	blank := func(c byte) byte {
		if c == '\n' {
			return c
		}
		return ' '
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if str.step(c) {
			out = append(out, c)
			continue
		}
		switch {
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				out = append(out, ' ')
				i++
			}
			if i < len(b) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				end = len(b)
			} else {
				end += i + 4
			}
			for ; i < end; i++ {
				out = append(out, blank(b[i]))
			}
			i--
		default:
			out = append(out, c)
		}
	}
	return out
}

// stripTrailingCommas replaces by a space a comma outside strings that
// follows a value and that only whitespace separates from the "}" or "]"
// after it, as VS Code's settings allow. It runs after
// stripJSONComments; valid JSON never changes, and every byte keeps its
// offset.
func stripTrailingCommas(b []byte) []byte {
	out := make([]byte, 0, len(b))
	var str jsonStrings
	var last byte // the last byte out that is not whitespace
	for i, c := range b {
		inStr := str.step(c)
		if !inStr && c == ',' && last != '{' && last != '[' && last != ',' {
			rest := bytes.TrimLeft(b[i+1:], " \t\r\n")
			if len(rest) > 0 && (rest[0] == '}' || rest[0] == ']') {
				out = append(out, ' ')
				continue
			}
		}
		out = append(out, c)
		if inStr || !isJSONSpace(c) {
			last = c
		}
	}
	return out
}

// A jsonStrings follows a byte-by-byte scan of JSON to tell the bytes of
// string literals from the rest.
type jsonStrings struct{ in, esc bool }

// step advances over c and reports whether c belongs to a string literal,
// its quotes included.
func (s *jsonStrings) step(c byte) bool {
	switch {
	case s.esc:
		s.esc = false
	case s.in && c == '\\':
		s.esc = true
	case c == '"':
		s.in = !s.in
		return true
	}
	return s.in
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// A syntaxError is a configuration file that does not parse, with the
// position of the fault when the parser gave one.
type syntaxError struct {
	format string // "JSON" or "TOML"
	// line and column locate the fault, both from 1 (the column in
	// characters); 0 when unknown.
	line, column int
	err          error
}

func (e *syntaxError) Error() string {
	if e.line == 0 {
		return fmt.Sprintf("parsing %s: %v", e.format, e.err)
	}
	return fmt.Sprintf("parsing %s: line %d, column %d: %v", e.format, e.line, e.column, e.err)
}

func (e *syntaxError) Unwrap() error { return e.err }

// newSyntaxError returns the error err of the file data, whose fault is
// the byte at offset at (len(data): its end; negative: unknown).
func newSyntaxError(format string, data []byte, at int, err error) *syntaxError {
	e := &syntaxError{format: format, err: err}
	if at >= 0 {
		e.line, e.column = lineColumn(data, at)
	}
	return e
}

// lineColumn returns the line and column, both from 1, of the byte at
// offset at of data; the column counts characters, not bytes, and leaves
// out a byte order mark.
func lineColumn(data []byte, at int) (line, column int) {
	at = max(0, min(at, len(data)))
	start := bytes.LastIndexByte(data[:at], '\n') + 1
	if start == 0 && bytes.HasPrefix(data, utf8BOM) && at >= len(utf8BOM) {
		start = len(utf8BOM)
	}
	return 1 + bytes.Count(data[:at], []byte("\n")), 1 + utf8.RuneCount(data[start:at])
}

// jsonSyntaxError describes the error err of decoding plain, the file data
// whose first skip bytes (a byte order mark) were dropped and whose
// comments and trailing commas were blanked (each byte keeping its
// offset).
func jsonSyntaxError(data []byte, skip int, plain []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		// Offset counts the bytes read, the faulty one included.
		return newSyntaxError("JSON", data, skip+int(max(syn.Offset-1, 0)), errors.New(syn.Error()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return newSyntaxError("JSON", data, len(data), errors.New("unexpected end of the file: a {, [ or string is not closed"))
	case errors.Is(err, io.EOF):
		return newSyntaxError("JSON", data, -1, errors.New("the file is empty; want a JSON object"))
	case errors.As(err, &typ):
		first := len(plain) - len(bytes.TrimLeft(plain, " \t\r\n"))
		return newSyntaxError("JSON", data, skip+first, fmt.Errorf("the document is %s, not an object", article(typ.Value)))
	}
	return newSyntaxError("JSON", data, -1, err)
}

// tomlSyntaxError describes the error err of decoding a TOML file.
func tomlSyntaxError(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &syntaxError{format: "TOML", line: pe.Position.Line, column: pe.Position.Col, err: errors.New(pe.Message)}
	}
	return &syntaxError{format: "TOML", err: err}
}

// article returns "an array", "a number", … for the JSON kind of value v.
func article(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	case "":
		return "a value"
	}
	return "a " + v
}
