package mcpbridge

import (
	"strconv"
	"strings"
	"unicode"
)

// implementationName is the bridge's MCP implementation name, as the
// original's: announced to clients and to proxied servers, and the name
// by which discovery knows an entry that would start the bridge itself.
const implementationName = "mcp-server-code-execution-mode"

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

// identifier turns a name into a lowercase Python identifier: other
// characters become "_", a leading digit gets a "_" before it, a keyword
// a "_" after it.
func identifier(name, fallback string) string {
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

// aliases assigns identifiers to names in order, "_2", "_3", … on
// collisions.
func aliases(names []string, fallback string) []string {
	used := map[string]bool{}
	out := make([]string, len(names))
	for i, n := range names {
		base := identifier(n, fallback)
		a := base
		for k := 2; used[a]; k++ {
			a = base + "_" + strconv.Itoa(k)
		}
		used[a] = true
		out[i] = a
	}
	return out
}

// pyRepr quotes s the way Python's repr quotes a plain string.
func pyRepr(s string) string {
	if !strings.Contains(s, "'") {
		return "'" + strings.ReplaceAll(s, `\`, `\\`) + "'"
	}
	return strconv.Quote(s)
}
