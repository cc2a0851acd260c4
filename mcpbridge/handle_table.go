package mcpbridge

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/httpserve"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/sandboxfile"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/live"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/servers"
)

// maxTombstones bounds the handles remembered as expired or ended, to
// tell their next use why they are gone.
const maxTombstones = 4096

// A heldSandbox is a sandbox behind a handle that this replica drives.
type heldSandbox struct {
	cs     *clientSession    // its handle and key are cs.handle, cs.handleKey
	client [sha256.Size]byte // the client token's digest
}

// A handles is the bridge's side of the sandboxes behind handles
// (protocol 2026-07-28, which any replica resumes): it finds a call's
// sandbox by its handle, mints and resumes handles, carries a waiting
// call's answers between replicas, keeps outputs and granted servers in
// the sandboxes, and sweeps and closes them. It holds what it needs of
// the bridge, and nothing else of it.
type handles struct {
	table      *handleTable        // the sandboxes held, and the handles that ended
	keys       *handle.Keyring     // mints and checks handles, request states and tags
	files      *sandboxfile.Keeper // the bridge's files in sandboxes: outputs, answers, grants, task records
	opts       HandleOptions
	maxTimeout time.Duration       // Options.MaxTimeout: how long a waiting call may wait
	outputMode string              // Options.OutputMode, of the results it answers with
	sleeps     bool                // idle sandboxes sleep (Options.Session.Sleep)
	servers    *servers.Set        // the configured servers a resumed sandbox may have loaded
	requests   *httpserve.Requests // the HTTP requests in flight, for their calls
	log        *slog.Logger

	// fresh returns the client session of a new handle's sandbox: a warm
	// one of the pool, or a new one.
	fresh func() *clientSession
	// over says why the client whose digest is client may not have one
	// more sandbox ("" when it may): Bridge.overSandboxes.
	over func(client [32]byte) string
	// attach returns a client session attached to sb, the sandbox of a
	// handle another replica minted (entrypoint.Resume).
	attach func(sb handle.Sandbox) *clientSession
}

// A handleTable is what a bridge knows of the handles it minted or
// resumed: the sandboxes it holds by their engine and container, and the
// handles that ended (expired, or their sandbox died) to say so.
type handleTable struct {
	mu    sync.Mutex
	held  map[string]*heldSandbox // by handleKey
	ended map[string]string       // handleKey → why it ended
	order []string                // ended's keys, oldest first
}

func newHandleTable() *handleTable {
	return &handleTable{held: map[string]*heldSandbox{}, ended: map[string]string{}}
}

// handleKey is the key of a sandbox in a handleTable.
func handleKey(engine, ref string) string {
	if len(ref) > 32 {
		ref = ref[:32]
	}
	return engine + "/" + ref
}

// count returns how many sandboxes the table holds for client.
func (t *handleTable) count(client [sha256.Size]byte) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, h := range t.held {
		if h.client == client {
			n++
		}
	}
	return n
}

// add records a sandbox this replica now holds.
func (t *handleTable) add(key string, h *heldSandbox) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held[key] = h
	delete(t.ended, key)
}

// addNew records h as held under key unless another is, and returns the
// one held.
func (t *handleTable) addNew(key string, h *heldSandbox) *heldSandbox {
	t.mu.Lock()
	defer t.mu.Unlock()
	if other, ok := t.held[key]; ok {
		return other
	}
	t.held[key] = h
	return h
}

// get returns the held sandbox of key, or why its handle ended ("" when
// this replica never knew it).
func (t *handleTable) get(key string) (*heldSandbox, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.held[key]; ok {
		return h, ""
	}
	return nil, t.ended[key]
}

// end forgets the held sandbox of key, remembering why it ended.
func (t *handleTable) end(key, why string) *heldSandbox {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.held[key]
	delete(t.held, key)
	if _, ok := t.ended[key]; !ok {
		t.order = append(t.order, key)
		if len(t.order) > maxTombstones {
			delete(t.ended, t.order[0])
			t.order = t.order[1:]
		}
	}
	t.ended[key] = why
	return h
}

// resumed returns the held sandbox whose call waits for the answer that
// state names, with the call and its question, forgotten there.
func (t *handleTable) resumed(state string) (*clientSession, *live.Pending, *live.Question) {
	t.mu.Lock()
	held := make([]*heldSandbox, 0, len(t.held))
	for _, h := range t.held {
		held = append(held, h)
	}
	t.mu.Unlock()
	for _, h := range held {
		if pc, q := h.cs.waiting.Resumed(state); pc != nil {
			return h.cs, pc, q
		}
	}
	return nil, nil, nil
}

// detached returns, and forgets (without a tombstone: a later call
// resumes it again), the held sandboxes this replica let go when idle
// (not those asleep, which the next call wakes) and that no call uses; their queues are claimed, and they are marked
// dropped for a call that found them just before.
func (t *handleTable) detached() []*heldSandbox {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*heldSandbox
	for k, h := range t.held {
		if h.cs.session.Ready() || h.cs.session.Asleep() || !h.cs.queue.Claim() {
			continue
		}
		h.cs.dropped.Store(true)
		delete(t.held, k)
		out = append(out, h)
	}
	return out
}

// list returns the client sessions of the held sandboxes, leaving the
// table as it is (nil on a nil table: no handles).
func (t *handleTable) list() []*clientSession {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*clientSession, 0, len(t.held))
	for _, h := range t.held {
		out = append(out, h.cs)
	}
	return out
}

// all returns every held sandbox and empties the table.
func (t *handleTable) all() []*heldSandbox {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*heldSandbox, 0, len(t.held))
	for k, h := range t.held {
		out = append(out, h)
		delete(t.held, k)
	}
	return out
}

// stateless reports whether req came without an MCP session (protocol
// 2026-07-28 over HTTP), where a sandbox lives behind a handle.
func stateless(req *mcp.CallToolRequest) bool {
	return httpserve.Stateless(req.Extra)
}

// clientToken returns the digest of the bearer token req carries (of ""
// when none), the identity handles are bound to.
func clientToken(req *mcp.CallToolRequest) (string, [sha256.Size]byte) {
	return bearerOf(req.Extra)
}

// bearerOf returns who a request's handles and tasks are bound to, and
// its digest (per-client limits count by it): with OAuth, the person of
// its access token (handle.Principal of its issuer and subject), which
// stays when the token is refreshed; else its bearer token ("" when
// none), as the shared token always is.
func bearerOf(extra *mcp.RequestExtra) (string, [sha256.Size]byte) {
	if id := httpserve.IdentityOf(extra); id != nil && id != httpserve.SharedIdentity {
		p := handle.Principal(id.Issuer, id.Subject)
		return p, sha256.Sum256([]byte(p))
	}
	var token string
	if extra != nil && extra.Header != nil {
		if v, ok := strings.CutPrefix(extra.Header.Get("Authorization"), "Bearer "); ok {
			token = strings.TrimSpace(v)
		}
	}
	return token, sha256.Sum256([]byte(token))
}

// handleProblem is the isError text of a handle that cannot be used.
func handleProblem(h string, err error) string {
	shown := handle.Redact(h)
	switch {
	case errors.Is(err, handle.ErrMalformed):
		return fmt.Sprintf("'session' is not a sandbox handle (%v); pass the session value a run_python result gave, unchanged, or leave it out to start a new sandbox", errors.Unwrap(err))
	case errors.Is(err, handle.ErrOtherKey):
		return fmt.Sprintf("the session handle %s was minted by another bridge (under another MCP_BRIDGE_HANDLE_KEY, or by a bridge process that has since restarted without one); leave session out to start a new sandbox", shown)
	case errors.Is(err, handle.ErrForged):
		return fmt.Sprintf("the session handle %s is forged or altered: its authentication does not match; nothing was run", shown)
	case errors.Is(err, handle.ErrForeign):
		return fmt.Sprintf("the session handle %s is not yours: it belongs to another client (minted for another person, or another bearer token); nothing was run", shown)
	}
	return fmt.Sprintf("the session handle %s cannot be used: %v", shown, err)
}

// mintedLine is the line of text that hands the model a new handle.
func mintedLine(h string) string {
	return "session: " + h + ` (pass it as "session" to keep this sandbox's state)`
}
