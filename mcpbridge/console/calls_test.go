package console

import (
	"strings"
	"testing"
)

// TestCallsEscapeFormatChars: the console shows a call's code and
// output with characters of category Cf escaped (a bidi override in a
// line of code cannot make it read as other code), and everything else,
// tabs included, as it is.
func TestCallsEscapeFormatChars(t *testing.T) {
	l := newCalls(nil)
	out, end := l.Begin("session-1", "\naccess = 'user' # \u202e } \u2066if admin:\u2069 {\nprint(1)", nil)
	defer end()
	out("stdout", "a\tb\u200bc\nhalf\u202e")
	calls, _ := l.snapshot(map[string]bool{"session-1": true})
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	c := calls[0]
	if c.Code != `access = 'user' # \u202e } \u2066if admin:\u2069 {` {
		t.Errorf("code %q", c.Code)
	}
	if strings.Join(c.Output, "|") != `a`+"\t"+`b\u200bc|half\u202e` {
		t.Errorf("output %q", c.Output)
	}
}
