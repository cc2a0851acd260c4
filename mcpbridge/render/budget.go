package render

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultBudget is the default budget of a result's text, in bytes of
// output (about 8,000 tokens).
const DefaultBudget = 32 << 10

// KeptOutputs is how many whole outputs a session keeps readable.
const KeptOutputs = 8

// OutputURIPrefix starts the URI of a call's whole output; the call's
// number in its session follows (or, for a handle's sandbox, the id of
// the file that keeps it there).
const OutputURIPrefix = "sandbox://output/"

// An Outputs keeps the whole output of a session's last calls whose
// result was cut to the budget, for resources/read. It holds at most
// KeptOutputs, each at most the session's output cap per stream. Its
// zero value is empty and ready to use.
type Outputs struct {
	mu   sync.Mutex
	next int
	kept map[int]string // call number → the whole output, rendered
}

// Keep keeps text and returns its URI.
func (s *Outputs) Keep(text string) string {
	return OutputURIPrefix + strconv.Itoa(s.add(text))
}

// add keeps text and returns its number.
func (s *Outputs) add(text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kept == nil {
		s.kept = map[int]string{}
	}
	s.next++
	s.kept[s.next] = text
	delete(s.kept, s.next-KeptOutputs)
	return s.next
}

// Get returns the output numbered n, if still kept.
func (s *Outputs) Get(n int) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text, ok := s.kept[n]
	return text, ok
}

// Read serves uri, the URI of an output of s, to resources/read.
func (s *Outputs) Read(uri string) (*mcp.ReadResourceResult, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(uri, OutputURIPrefix))
	if err != nil || !strings.HasPrefix(uri, OutputURIPrefix) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	text, ok := s.Get(n)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
}

// ApplyBudget cuts the output of o to budget bytes when it is over: each
// stream keeps its head and its tail around a marker saying how much was
// cut and where the whole is. keep stores the whole output and returns
// its URI.
func (o *Outcome) ApplyBudget(budget int, keep func(whole string) string) {
	if len(o.stdout)+len(o.stderr) <= budget {
		return
	}
	uri := keep(o.compactText())
	errBudget := min(len(o.stderr), budget/2)
	o.stdout = cutMiddle(o.stdout, budget-errBudget, uri)
	o.stderr = cutMiddle(o.stderr, errBudget, uri)
	o.output = uri
}

// cutMiddle returns s cut to about max bytes: its head and its tail, on
// line boundaries where one is near, around a line saying how much was
// cut and where the whole output is.
func cutMiddle(s string, max int, uri string) string {
	if len(s) <= max {
		return s
	}
	head, tail := max/2, max-max/2
	h := s[:runeStartAtOrBefore(s, head)]
	if i := strings.LastIndexByte(h, '\n'); i >= len(h)/2 {
		h = h[:i+1]
	}
	t := s[runeStartAtOrAfter(s, len(s)-tail):]
	if i := strings.IndexByte(t, '\n'); i >= 0 && i < len(t)/2 {
		t = t[i+1:]
	}
	cut := len(s) - len(h) - len(t)
	if !strings.HasSuffix(h, "\n") && h != "" {
		h += "\n"
	}
	return h + fmt.Sprintf("[… %d bytes cut to fit the output budget; the whole output: %s …]\n", cut, uri) + t
}

// runeStartAtOrBefore returns the start of the character at byte i of s.
func runeStartAtOrBefore(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// runeStartAtOrAfter returns the start of the first character at or
// after byte i of s.
func runeStartAtOrAfter(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

// OutputTemplate is the resource template of the kept outputs.
func OutputTemplate() *mcp.ResourceTemplate {
	return &mcp.ResourceTemplate{
		Name:        "output",
		Title:       "The whole output of a run_python call",
		Description: "The whole output of a call whose result was cut to the output budget, readable by the session that made the call while it is one of its last 8 such calls.",
		URITemplate: OutputURIPrefix + "{call}{?session}",
		MIMEType:    "text/plain",
	}
}
