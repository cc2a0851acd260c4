package mcpbridge

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A callQuota holds each client (a person with OAuth, else a bearer
// token: bearerOf) to its limits, per replica as the handles' limit is:
// its run_python calls of the current minute (Options.
// PersonCallsPerMinute) and the sandboxes it holds (Options.
// PersonMaxSandboxes).
type callQuota struct {
	perMinute    int // 0: no limit
	maxSandboxes int // 0: no limit
	now          func() time.Time

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

func newCallQuota(perMinute, maxSandboxes int) *callQuota {
	return &callQuota{perMinute: perMinute, maxSandboxes: maxSandboxes, now: time.Now, windows: map[[sha256.Size]byte]*callWindow{}}
}

// sandboxes says why a client holding held sandboxes (its MCP sessions'
// and its handles') may not have one more; "" when it may.
func (q *callQuota) sandboxes(held int) string {
	if q == nil || q.maxSandboxes <= 0 || held < q.maxSandboxes {
		return ""
	}
	return fmt.Sprintf("not run: you hold %d sandboxes (MCP sessions and handles), the limit per person (MCP_BRIDGE_PERSON_MAX_SANDBOXES=%d on this replica): end a session, or let a handle expire", held, q.maxSandboxes)
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
