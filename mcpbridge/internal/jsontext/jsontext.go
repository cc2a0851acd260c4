// Package jsontext writes a JSON value as a person is shown it: the
// values of keys a function names hidden ("[redacted]", at any depth),
// every character of Unicode category Cf (bidi controls, zero-width
// characters) and every control character escaped, keys in order, and
// either kept up to a limit while the whole is counted, or streamed
// whole to a writer; never a copy of the whole value in memory.
package jsontext

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxDepth bounds the nesting written; deeper values read "[too deep]"
// (as audit.Redact writes them).
const MaxDepth = 32

// Redacted replaces the value of a key the redacts function names.
const Redacted = "[redacted]"

// A Text writes a value's JSON as a person is shown it: keeping its
// first limit bytes (0: none) and counting them all (Capped), or writing
// them all to a writer (To). Strings escape what JSON escapes and every
// character of Unicode category Cf, as \uXXXX.
type Text struct {
	out   io.Writer // nil: keep up to limit
	limit int
	kept  []byte
	n     int64
	err   error
	buf   [utf8.UTFMax * 6]byte
}

// Capped returns a Text that keeps the first limit bytes written and
// counts them all.
func Capped(limit int) *Text { return &Text{limit: limit} }

// To returns a Text that writes everything to w.
func To(w io.Writer) *Text { return &Text{out: w} }

// Len returns how many bytes were written in all.
func (t *Text) Len() int64 { return t.n }

// Kept returns the bytes kept (at most the limit), cut at a character's
// boundary.
func (t *Text) Kept() string { return strings.ToValidUTF8(string(t.kept), "") }

// Err returns the first error of the writer of To.
func (t *Text) Err() error { return t.err }

// Length returns the length of v's JSON as a Text writes it (key is the
// key v is the value of; "" for none), keeping none of it.
func Length(v any, key string, redacts func(string) bool) int64 {
	t := &Text{}
	t.Value(v, key, redacts)
	return t.n
}

// writeString adds s (a part of a caller's string: never copied whole).
func (t *Text) writeString(s string) {
	t.n += int64(len(s))
	if t.out != nil {
		if t.err == nil {
			_, t.err = io.WriteString(t.out, s)
		}
		return
	}
	if room := t.limit - len(t.kept); room > 0 {
		t.kept = append(t.kept, s[:min(room, len(s))]...)
	}
}

// write adds p.
func (t *Text) write(p []byte) {
	t.n += int64(len(p))
	if t.out != nil {
		if t.err == nil {
			_, t.err = t.out.Write(p)
		}
		return
	}
	if room := t.limit - len(t.kept); room > 0 {
		t.kept = append(t.kept, p[:min(room, len(p))]...)
	}
}

// shown returns what was kept, cut at a character's boundary and, when
// it is not all, saying how long the whole is.
func (t *Text) Shown() string {
	if t.n <= int64(len(t.kept)) {
		return string(t.kept)
	}
	return strings.ToValidUTF8(string(t.kept), "") + "… (cut: " + strconv.FormatInt(t.n, 10) + " bytes in all)"
}

// value writes v (the value of key; "" for none), the values of keys
// redacts names replaced.
func (t *Text) Value(v any, key string, redacts func(string) bool) {
	t.valueAt(v, key, redacts, 0)
}

func (t *Text) valueAt(v any, key string, redacts func(string) bool, depth int) {
	if key != "" && redacts != nil && redacts(key) {
		t.Str(Redacted)
		return
	}
	if depth > MaxDepth {
		t.Str("[too deep]")
		return
	}
	switch x := v.(type) {
	case nil:
		t.writeString("null")
	case string:
		t.Str(x)
	case bool:
		t.writeString(strconv.FormatBool(x))
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			t.Str(strconv.FormatFloat(x, 'g', -1, 64))
			return
		}
		data, _ := json.Marshal(x)
		t.write(data)
	case json.Number:
		t.writeString(x.String())
	case map[string]any:
		t.writeString("{")
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				t.writeString(",")
			}
			t.Str(k)
			t.writeString(":")
			t.valueAt(x[k], k, redacts, depth+1)
		}
		t.writeString("}")
	case []any:
		t.writeString("[")
		for i, e := range x {
			if i > 0 {
				t.writeString(",")
			}
			t.valueAt(e, "", redacts, depth+1)
		}
		t.writeString("]")
	default:
		data, err := json.Marshal(x)
		if err != nil {
			t.Str("(not encodable: " + err.Error() + ")")
			return
		}
		t.Str(string(data))
	}
}

// str writes s as a JSON string, Cf characters escaped.
func (t *Text) Str(s string) {
	t.writeString(`"`)
	start := 0
	flush := func(end int) {
		if start < end {
			t.writeString(s[start:end])
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		esc := escapeRune(r, size, t.buf[:0])
		if esc == nil {
			i += size
			continue
		}
		flush(i)
		t.write(esc)
		i += size
		start = i
	}
	flush(len(s))
	t.writeString(`"`)
}

// escapeRune returns r's escape in a shown JSON string appended to buf,
// or nil when r stands as itself.
func escapeRune(r rune, size int, buf []byte) []byte {
	switch {
	case r == utf8.RuneError && size == 1:
		return append(buf, `\ufffd`...)
	case r == '"' || r == '\\':
		return append(buf, '\\', byte(r))
	case r == '\n':
		return append(buf, `\n`...)
	case r == '\r':
		return append(buf, `\r`...)
	case r == '\t':
		return append(buf, `\t`...)
	case r < 0x20 || r == 0x7f || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
		if r > 0xffff {
			r1, r2 := utf16Pair(r)
			return fmt.Appendf(buf, `\u%04x\u%04x`, r1, r2)
		}
		return fmt.Appendf(buf, `\u%04x`, r)
	}
	return nil
}

// utf16Pair returns r's surrogate pair.
func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// escapeFormat returns s with every character of Unicode category Cf
// and every control character written as its \u escape, for the text
// of a question that is not JSON (server and tool names).
func EscapeFormat(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Cf, r) || unicode.IsControl(r) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.Is(unicode.Cf, r) || unicode.IsControl(r) {
			if r > 0xffff {
				r1, r2 := utf16Pair(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// EscapeCf returns s with every character of Unicode category Cf (bidi
// controls, zero-width characters) written as its \u escape, and all
// else as it is: for text shown as lines (code, output) whose layout
// such a character could change.
func EscapeCf(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unicode.Is(unicode.Cf, r) {
			b.WriteRune(r)
			continue
		}
		if r > 0xffff {
			r1, r2 := utf16Pair(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		} else {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}
