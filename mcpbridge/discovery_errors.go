package mcpbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

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
