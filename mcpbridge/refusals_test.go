package mcpbridge

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// refusalLoopCode calls a server the policy may not load 5,000 times
// with 2 KB of arguments, then opens 500 connections to a host the
// network policy does not allow, and prints how each loop was refused.
const refusalLoopCode = `from mcp import runtime
import collections, urllib.request, urllib.error
why = collections.Counter()
for i in range(5000):
    try:
        await runtime.call_tool('Stub Two', 'echo', {'pad': 'p' * 2000, 'i': i})
    except MCPError as e:
        why['max_tool_calls' if 'max_tool_calls' in str(e) else 'load' if 'may not be loaded' in str(e) else str(e)] += 1
for i in range(500):
    try:
        urllib.request.urlopen("http://127.0.0.2:9/x", timeout=10)
    except urllib.error.HTTPError as e:
        why['egress %d' % e.code] += 1
print(sorted(why.items()))`

// TestRefusalLoopAuditLog: a loop of refused calls ends at max_tool_calls
// like any loop of calls (every refused call counts), and the audit log
// of 5,000 refused calls and 500 refused connections stays small, the
// records' counts adding up to every refusal. On bb2658b the refused
// calls did not count (5,000 "may not be loaded") and each wrote a
// record of its own.
func TestRefusalLoopAuditLog(t *testing.T) {
	cs, auditPath := policyBridge(t, `{"servers": {"Stub Two": {"load": false}}, "max_tool_calls": 100, "network": {"allow": ["127.0.0.1:9"]}}`, nil)
	_, text, _ := call(t, cs, map[string]any{"code": refusalLoopCode, "timeout": 240})
	if want := "[('egress 403', 500), ('load', 100), ('max_tool_calls', 4900)]"; text != want {
		t.Fatalf("the loop's refusals: %q, want %q", text, want)
	}
	waitFor(t, "the merged records", func() bool {
		got := refusalCounts(t, auditPath)
		return got["tool_call load"] == 100 && got["tool_call max_tool_calls"] == 4900 && got["egress denied"] == 500
	})
	fi, err := os.Stat(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 64<<10 {
		t.Errorf("the audit log holds %d bytes after 5,500 refusals, want at most 64 KiB", fi.Size())
	}
	t.Logf("audit log: %d bytes, %d records, after 5,500 refusals", fi.Size(), len(auditRecords(t, auditPath)))
}

// refusalCounts sums the counts of the refusals' records at path, by
// event and why.
func refusalCounts(t *testing.T, path string) map[string]int {
	out := map[string]int{}
	for _, rec := range auditRecords(t, path) {
		if rec["outcome"] != "denied" {
			continue
		}
		n, _ := rec["count"].(float64)
		if n == 0 {
			n = 1 // a record of the old code, which had no count
		}
		why := fmt.Sprint(rec["event"], " denied")
		if rec["event"] == "tool_call" {
			why = "tool_call load"
			if strings.Contains(fmt.Sprint(rec["error"]), "max_tool_calls") {
				why = "tool_call max_tool_calls"
			}
		}
		out[why] += int(n)
	}
	return out
}
