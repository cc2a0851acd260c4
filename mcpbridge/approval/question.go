package approval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/jsontext"
)

// What a confirmation question shows of a call's arguments: every
// top-level key, each value's JSON (secrets redacted, format characters
// escaped) cut to its share of maxShownArgs, with its whole length
// stated. A question never shows arguments its approver cannot see
// whole or know to be cut: a long early value cannot push a later key
// out of view, and a bidi override or a zero-width character in a value
// shows as its escape, never as what it does to the text around it.
const (
	// maxShownArgs is the values' budget in a question, shared among its
	// keys (a short value leaves the rest of its share to the others).
	maxShownArgs = 2 << 10
	// minShownShare is the least a value is shown, however many keys.
	minShownShare = 48
	// maxShownKey bounds a key's name as shown.
	maxShownKey = 64
	// maxShownKeys bounds the top-level keys of a call that asks: one with
	// more is refused unasked, as no approver can read them all.
	maxShownKeys = 100
)

// errTooManyArguments refuses to ask about a call with more than
// maxShownKeys top-level arguments.
var errTooManyArguments = errors.New("too many top-level arguments to show a person")

// showArguments renders args for a question, one line per top-level key
// in key order ("  key = value"), each value cut to its share with its
// whole length stated; redacts (nil: none) names the keys whose values,
// at any depth, are hidden. It fails with errTooManyArguments past
// maxShownKeys keys.
func showArguments(args map[string]any, redacts func(string) bool) (string, error) {
	if len(args) > maxShownKeys {
		return "", fmt.Errorf("%w: %d, at most %d", errTooManyArguments, len(args), maxShownKeys)
	}
	if len(args) == 0 {
		return "  (none)", nil
	}
	keys := slices.Sorted(maps.Keys(args))
	sizes := make([]int64, len(keys))
	for i, k := range keys {
		sizes[i] = jsontext.Length(args[k], k, redacts)
	}
	shares := shareOut(sizes, maxShownArgs, minShownShare)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		name := jsontext.Capped(maxShownKey)
		name.Str(k)
		b.WriteString("  ")
		b.WriteString(name.Shown())
		b.WriteString(" = ")
		v := jsontext.Capped(shares[i])
		v.Value(args[k], k, redacts)
		b.WriteString(v.Shown())
	}
	return b.String(), nil
}

// WriteArguments writes args whole as JSON (redacted as a question shows
// them, format characters escaped, keys in order) to w, holding no copy
// of them: what the console serves as a question's whole arguments.
func WriteArguments(w io.Writer, args map[string]any, redacts func(string) bool) (int64, error) {
	t := jsontext.To(w)
	t.Value(args, "", redacts)
	return t.Len(), t.Err()
}

// argumentsLength returns the length WriteArguments would write.
func argumentsLength(args map[string]any, redacts func(string) bool) int64 {
	return jsontext.Length(args, "", redacts)
}

// escapeFormat returns s with every character of Unicode category Cf and
// every control character written as its \u escape, for the text of a
// question that is not JSON (server and tool names).
func escapeFormat(s string) string { return jsontext.EscapeFormat(s) }

// shareOut divides budget among values of the given sizes: each gets at
// least least, and a value smaller than its share leaves the rest to the
// larger ones.
func shareOut(sizes []int64, budget, least int) []int {
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(min(max(sizes[a]-sizes[b], -1), 1)) })
	shares := make([]int, len(sizes))
	left := budget
	for n, i := range order {
		share := max(left/(len(order)-n), least)
		if sizes[i] < int64(share) {
			share = int(sizes[i])
		}
		shares[i] = share
		left = max(left-share, 0)
	}
	return shares
}

// confirmMessage is the question shown to the user: the server, the
// tool, every top-level argument (redacted as in audit records, each
// value cut to its share with its whole length stated, format characters
// escaped: showArguments) and, when the sandbox says which (line > 0),
// the line of code that asks, labelled as the sandbox's claim. It fails
// when the arguments cannot be shown whole enough (errTooManyArguments).
func confirmMessage(server, tool string, args map[string]any, redacts func(string) bool, line int) (string, error) {
	shown, err := showArguments(args, redacts)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Code running in the sandbox wants to call the tool %q of the MCP server %q with %d argument(s) "+
		"(each value shown up to its share, whole lengths stated; secrets redacted; invisible characters escaped):\n%s\n",
		tool, server, len(args), shown)
	if line > 0 {
		fmt.Fprintf(&b, "\nThe sandbox says this call comes from line %d of its code (its claim, not checked).\n", line)
	}
	b.WriteString("\nAllow this call?")
	return b.String(), nil
}

// maxCodeLine bounds the line a sandbox may claim a call comes from.
const maxCodeLine = 10_000_000

type codeLineKey struct{}

// WithCodeLine returns ctx carrying line, the line of the run_python code
// a proxied call comes from, when it is one (1 to maxCodeLine; the
// sandbox says so, so it is shown, never trusted).
func WithCodeLine(ctx context.Context, line int) context.Context {
	if line < 1 || line > maxCodeLine {
		return ctx
	}
	return context.WithValue(ctx, codeLineKey{}, line)
}

// codeLineOf returns the line ctx carries, or 0.
func codeLineOf(ctx context.Context) int {
	line, _ := ctx.Value(codeLineKey{}).(int)
	return line
}
