package console

import (
	"encoding/json"
	"strings"
	"sync"
)

// A Record is an audit record as the console shows it: its time, event
// and session, and the rest of its fields as JSON, cut short.
type Record struct {
	Time    string `json:"time"`
	Event   string `json:"event"`
	Session string `json:"session,omitempty"`
	Detail  string `json:"detail"`
}

// maxDetail bounds a Record's Detail, in bytes.
const maxDetail = 400

// A Ring keeps the most recent audit records, for the console. The zero
// value is not usable: see NewRing.
type Ring struct {
	mu   sync.Mutex
	recs []Record // a circle: next is the oldest once full
	next int
	full bool
}

// NewRing returns a ring of the last n records (at least 1).
func NewRing(n int) *Ring {
	return &Ring{recs: make([]Record, max(n, 1))}
}

// Add keeps the record of an audit line (one JSON object); a line that
// is not one is ignored.
func (g *Ring) Add(line []byte) {
	var m map[string]any
	if json.Unmarshal(line, &m) != nil {
		return
	}
	rec := Record{}
	rec.Time, _ = m["time"].(string)
	rec.Event, _ = m["event"].(string)
	rec.Session, _ = m["session"].(string)
	if id, ok := m["mcp_session"].(string); ok {
		m["mcp_session"] = ShortSessionID(id) // a credential of sorts
	}
	delete(m, "time")
	delete(m, "event")
	delete(m, "session")
	d, _ := json.Marshal(m)
	rec.Detail = cut(string(d), maxDetail)
	g.mu.Lock()
	g.recs[g.next] = rec
	g.next = (g.next + 1) % len(g.recs)
	g.full = g.full || g.next == 0
	g.mu.Unlock()
}

// Records returns the records kept, the newest first.
func (g *Ring) Records() []Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.next
	if g.full {
		n = len(g.recs)
	}
	out := make([]Record, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, g.recs[(g.next-i+len(g.recs))%len(g.recs)])
	}
	return out
}

// cut returns s cut to at most n bytes, on a rune boundary, with "…"
// when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xc0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// ShortSessionID returns enough of an MCP session ID to tell sessions
// apart, not enough to use it: the replica's prefix (MCP_BRIDGE_HTTP_REPLICA)
// and 6 characters of the random part, followed by "…".
func ShortSessionID(id string) string {
	if id == "" {
		return ""
	}
	replica, random, ok := strings.Cut(id, ".")
	if !ok {
		replica, random = "", id
	} else {
		replica += "."
	}
	if len(random) <= 6 {
		return id
	}
	return replica + random[:6] + "…"
}
