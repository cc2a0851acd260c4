package mcpbridge

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A callQuota counts each client's run_python calls of the current
// minute (a person with OAuth, else a bearer token: bearerOf), against
// Options.PersonCallsPerMinute; per replica, as the handles' limit is.
type callQuota struct {
	perMinute int // 0: no limit
	now       func() time.Time

	mu      sync.Mutex
	windows map[[sha256.Size]byte]*callWindow
}

// A callWindow is one client's calls since start.
type callWindow struct {
	start time.Time
	n     int
}

// maxWindows bounds the clients counted at once: past it, those whose
// minute ended are forgotten.
const maxWindows = 4096

func newCallQuota(perMinute int) *callQuota {
	return &callQuota{perMinute: perMinute, now: time.Now, windows: map[[sha256.Size]byte]*callWindow{}}
}

// take counts a call of the client of extra, or says why it may not run:
// the limit reached, naming it and when to try again. Calls without a
// client (stdio, a loopback client without a token) are not counted.
func (q *callQuota) take(extra *mcp.RequestExtra) string {
	if q == nil || q.perMinute <= 0 {
		return ""
	}
	who, digest := bearerOf(extra)
	if who == "" {
		return ""
	}
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.windows[digest]
	if w == nil || now.Sub(w.start) >= time.Minute {
		if w == nil && len(q.windows) >= maxWindows {
			for k, old := range q.windows {
				if now.Sub(old.start) >= time.Minute {
					delete(q.windows, k)
				}
			}
		}
		w = &callWindow{start: now}
		q.windows[digest] = w
	}
	if w.n >= q.perMinute {
		wait := w.start.Add(time.Minute).Sub(now).Round(time.Second)
		return fmt.Sprintf("not run: you made %d run_python calls in the last minute, the limit per person (MCP_BRIDGE_PERSON_CALLS_PER_MINUTE=%d on this replica); try again in %v",
			w.n, q.perMinute, max(wait, time.Second))
	}
	w.n++
	return ""
}
