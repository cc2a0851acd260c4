//go:build integration

package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rpcFloodCode sends 64 concurrent RPCs of 12 MiB each, calls of a tool
// the policy has a person confirm, and prints how they ended.
const rpcFloodCode = `import asyncio, collections
from mcp import runtime
big = "x" * (12 << 20)
async def one(i):
    try:
        await runtime.call_tool("everything", "echo", {"message": big, "i": i})
        return "ran"
    except MCPError as e:
        s = str(e)
        for k in ("its share", "the bridge holds", "declined"):
            if k in s:
                return k
        return s[:300]
got = await asyncio.gather(*(one(i) for i in range(64)))
print(sorted(collections.Counter(got).items()))`

// maxFloodVmHWM is the bound the bridge's peak memory stays under while
// 64 RPCs of 12 MiB to a tool that asks wait for their question: 2 held
// at once (the sandbox's 32 MiB share), the others refused as they come.
// The bound leaves room for the collector's pacing (GOGC=100) over two
// held payloads, their decoded arguments and one frame being read.
const maxFloodVmHWM = 512 << 20

// TestRPCFloodMemory: 64 concurrent RPCs of 12 MiB to a tool that asks
// for confirmation (the client answers each after 10 s) keep the bridge's
// peak memory (VmHWM) under maxFloodVmHWM: the sandbox holds at most its
// share of RPC bytes in flight, the others are refused with a clear
// error at once; the next call answers. On bb2658b every RPC was taken
// and decoded whole, its arguments copied again for the question: the
// bridge passed 3 GiB.
func TestRPCFloodMemory(t *testing.T) {
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		home, _ := npmHome(t)
		writeFile(t, filepath.Join(home, "MCPs", "policy.json"), `{"servers": {"everything": {"confirm": ["echo"]}}}`)
		// The sandbox's own copies of 64 frames of 12 MiB need room.
		b := startHTTPBridge(t, e, httpOpts{env: []string{"HOME=" + home, "MCP_BRIDGE_POOL_SIZE=0", "MCP_BRIDGE_MEMORY=3g"}})
		var asked atomic.Int32
		copts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if len(req.Params.Message) > 8<<10 {
				t.Errorf("a question of %d bytes", len(req.Params.Message))
			}
			select {
			case <-time.After(10 * time.Second):
			case <-ctx.Done():
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tr := &mcp.StreamableClientTransport{Endpoint: b.url, HTTPClient: b.httpClient(b.token)}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "integration-rpc-flood", Version: "1"}, copts).Connect(ctx, tr, sessions2025)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		before := vmHWM(t, b.pid)
		text, isErr, _ := runWith(t, cs, map[string]any{"servers": []string{"everything"}, "code": rpcFloodCode, "timeout": 170})
		peak := vmHWM(t, b.pid)
		t.Logf("bridge VmHWM %d MiB before, %d MiB after 64 RPCs of 12 MiB (bound %d MiB); %d questions; %s",
			before>>20, peak>>20, maxFloodVmHWM>>20, asked.Load(), text)
		if isErr {
			t.Fatalf("the flood: %q", text)
		}
		var declined, share int
		for _, part := range strings.Split(strings.Trim(text, "[]"), "), (") {
			k, v, _ := strings.Cut(strings.Trim(part, "()"), ", ")
			n, _ := strconv.Atoi(v)
			switch strings.Trim(k, "'") {
			case "declined":
				declined = n
			case "its share":
				share = n
			default:
				t.Errorf("an RPC ended otherwise: %s", part)
			}
		}
		if declined < 2 || share < 1 || declined+share != 64 {
			t.Errorf("declined %d, refused past the share %d, of 64: %s", declined, share, text)
		}
		if peak > maxFloodVmHWM {
			t.Errorf("the bridge's VmHWM reached %d MiB, over %d MiB", peak>>20, maxFloodVmHWM>>20)
		}
		if text, isErr, _ := runWith(t, cs, map[string]any{"code": "print(6 * 7)"}); isErr || text != "42" {
			t.Fatalf("the next call: %v %q", isErr, text)
		}
	})
}

// vmHWM returns the peak resident memory of process pid, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	f := strings.Fields(firstMatch(fmt.Sprintf("/proc/%d/status", pid), "VmHWM"))
	if len(f) != 2 || f[1] != "kB" {
		t.Fatalf("VmHWM of %d: %q", pid, f)
	}
	kb, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return kb << 10
}
