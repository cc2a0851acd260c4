package mcpbridge

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// twoClients runs one bridge whose "slow" server is the stub with its
// sleep and pid tools (shared as said), and connects two clients to it.
func twoClients(t *testing.T, shared bool) (a, b *mcp.ClientSession) {
	t.Helper()
	home := t.TempDir()
	self, _ := os.Executable()
	sharedJSON := ""
	if shared {
		sharedJSON = `, "shared": true`
	}
	write(t, filepath.Join(home, "MCPs", "slow.json"), `{"mcpServers": {
		"slow": {"command": "`+self+`", "env": {"`+stubServerEnv+`": "1", "`+stubSlowEnv+`": "1"}`+sharedJSON+`}
	}}`)
	f := newFixture(t, fixtureOptions{Options: Options{Registry: discovery.NewRegistry(discovery.Options{Home: home, Cwd: t.TempDir(), AllowSelf: true})}})
	return f.connectInMemory(t), f.connectInMemory(t)
}

func serverPID(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, text, _ := call(t, cs, map[string]any{"servers": []string{"slow"}, "code": "print(await mcp_slow.pid())"})
	if res.IsError || text == "" {
		t.Fatalf("pid: %q", text)
	}
	return text
}

// TestProxiedServersPerSession checks that by default each client
// session gets its own instance of a server it loads.
func TestProxiedServersPerSession(t *testing.T) {
	t.Parallel()
	a, b := twoClients(t, false)
	if pa, pb := serverPID(t, a), serverPID(t, b); pa == pb {
		t.Fatalf("both sessions use server process %s, want one each", pa)
	}
}

// TestSharedServerSurvivesAnotherSessionsCancel checks that a server
// entry with "shared": true is one instance for every session, and that
// a call cancelled in one session (its run_python timed out) leaves the
// other session's call on the same server running to its answer, on the
// same server process.
func TestSharedServerSurvivesAnotherSessionsCancel(t *testing.T) {
	t.Parallel()
	a, b := twoClients(t, true)
	pid := serverPID(t, a)
	if pb := serverPID(t, b); pb != pid {
		t.Fatalf("a shared server: session A uses process %s, B %s", pid, pb)
	}
	var wg sync.WaitGroup
	var aText string
	var aErr bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, text, _ := call(t, a, map[string]any{"servers": []string{"slow"}, "timeout": 30,
			"code": "print(await mcp_slow.sleep(ms=3000))"})
		aText, aErr = text, res.IsError
	}()
	// B's call on the same server is cancelled when its run_python
	// times out, while A's is in flight.
	res, text, _ := call(t, b, map[string]any{"servers": []string{"slow"}, "timeout": 1,
		"code": "print(await mcp_slow.sleep(ms=20000))"})
	if !res.IsError || !strings.Contains(text, "timeout") {
		t.Fatalf("B's call: %q (isError %v), want a timeout", text, res.IsError)
	}
	wg.Wait()
	if aErr || aText != "slept" {
		t.Fatalf("A's call on the shared server while B's was cancelled: %q (isError %v), want its answer", aText, aErr)
	}
	if after := serverPID(t, b); after != pid {
		t.Fatalf("the shared server was restarted (process %s, then %s) after a cancelled call", pid, after)
	}
}
