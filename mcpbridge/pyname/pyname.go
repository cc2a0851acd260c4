// Package pyname names MCP servers and tools in Python: the identifiers
// (aliases) sandbox code calls them by, and Python's repr of a string.
package pyname

import (
	"strconv"
	"strings"
	"unicode"
)

// pythonKeywords is keyword.kwlist of CPython 3.10–3.14: names that
// cannot be identifiers (aliases, parameters). Soft keywords (match,
// case, type, _) can.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

// IsKeyword reports whether s is a Python keyword (keyword.kwlist).
func IsKeyword(s string) bool { return pythonKeywords[s] }

// Identifier turns a name into a lowercase Python identifier: other
// characters become "_", a leading digit gets a "_" before it, a keyword
// a "_" after it.
func Identifier(name, fallback string) string {
	var b strings.Builder
	lastUnderscore := false
	for _, r := range strings.ToLower(strings.TrimSpace(name)) {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			lastUnderscore = false
		} else if !lastUnderscore {
			b.WriteByte('_')
			lastUnderscore = true
		}
	}
	s := b.String()
	if strings.Trim(s, "_") == "" {
		s = fallback
	}
	if s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	if pythonKeywords[s] {
		s += "_"
	}
	return s
}

// Aliases assigns identifiers to names in order, "_2", "_3", … on
// collisions.
func Aliases(names []string, fallback string) []string {
	used := map[string]bool{}
	out := make([]string, len(names))
	for i, n := range names {
		base := Identifier(n, fallback)
		a := base
		for k := 2; used[a]; k++ {
			a = base + "_" + strconv.Itoa(k)
		}
		used[a] = true
		out[i] = a
	}
	return out
}

// Repr quotes s the way Python's repr quotes a plain string.
func Repr(s string) string {
	if !strings.Contains(s, "'") {
		return "'" + strings.ReplaceAll(s, `\`, `\\`) + "'"
	}
	return strconv.Quote(s)
}
