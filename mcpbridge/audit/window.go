package audit

import (
	"maps"
	"time"
)

// Refusals are merged: code in a loop can be refused thousands of times a
// second (a host the network policy does not allow, a server it may not
// load, a tool past max_tool_calls), and a record each would rotate every
// tenant's records out of the shared log. A refusal's record (an egress
// record whose outcome is "denied", a tool call's whose outcome is
// "denied") is merged with those of the same session, event, target and
// reason: the first is written at once ("count": 1); those that follow
// within mergeWindow make one record with their "count" and the "since"
// of the window, written when it ends, and the window stays open while
// they go on. So a loop costs one record a second per target and reason.
// A session refused at more than maxTargetsPerSession targets at once
// (names made up in a loop) has the rest merged into one record of
// target "*" (mergedTarget), and past maxMergeWindows open windows
// refusals are written as they come.
const (
	// MergeWindow is how long a refusal's window stays open.
	MergeWindow = time.Second
	// maxMergeWindows bounds the windows open at once, in all sessions.
	maxMergeWindows = 4096
	// maxTargetsPerSession bounds one session's windows of distinct
	// targets; its refusals past them share one window.
	maxTargetsPerSession = 16
)

// mergedTarget is the target of the window a session's refusals share
// past maxTargetsPerSession targets.
const mergedTarget = "*"

// A mergeKey is what refusals are merged by.
type mergeKey struct {
	event, session, target, reason string
}

// A mergeWindow holds the refusals of one key since the window opened.
type mergeWindow struct {
	since time.Time
	first map[string]any // the first record merged in it; nil: none yet
	count int64
}

// mergedRecord returns the record of the window a session's refusals
// share past maxTargetsPerSession targets, from one of them: its event,
// outcome and session, target "*".
func mergedRecord(rec map[string]any) map[string]any {
	out := map[string]any{"target": mergedTarget, "reason": "refused at more targets than are kept apart"}
	for _, k := range []string{"event", "outcome", "session", "mcp_session"} {
		if v, ok := rec[k]; ok {
			out[k] = v
		}
	}
	return out
}

// windowRecord returns the record of a window: its first refusal's
// record with the window's count and since.
func windowRecord(rec map[string]any, n int64, since time.Time) map[string]any {
	rec = maps.Clone(rec)
	rec["count"] = n
	rec["since"] = since.UTC().Format(time.RFC3339Nano)
	return rec
}
