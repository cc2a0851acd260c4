//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// tokenCount is one text's length in the tokens of two real tokenizers.
type tokenCount struct {
	CL100K int `json:"cl100k_base"`
	O200K  int `json:"o200k_base"`
}

// countTokens counts texts with js-tiktoken (integration/node/tokens.mjs).
func countTokens(t testing.TB, texts ...string) []tokenCount {
	t.Helper()
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(texts)
	cmd := exec.Command("node", filepath.Join(dir, "tokens.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("counting tokens: %v\n%s", err, errb.String())
	}
	var counts []tokenCount
	if err := json.Unmarshal(out, &counts); err != nil || len(counts) != len(texts) {
		t.Fatalf("token counts %s: %v", out, err)
	}
	return counts
}

// homeWithServers writes a home directory whose ~/MCPs configures n servers:
// the three npm reference servers first, then copies under other names.
func homeWithServers(t testing.TB, n int) string {
	t.Helper()
	bin := filepath.Join(nodeDir(t), "node_modules", ".bin")
	home, shared := t.TempDir(), t.TempDir()
	base := []map[string]any{
		{"command": filepath.Join(bin, "mcp-server-everything"), "description": "reference test server"},
		{"command": filepath.Join(bin, "mcp-server-filesystem"), "args": []string{shared}},
		{"command": filepath.Join(bin, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(shared, "memory.jsonl")}},
	}
	names := []string{"everything", "filesystem", "memory"}
	servers := map[string]any{}
	for i := range n {
		name := names[i%3]
		if i >= 3 {
			name = fmt.Sprintf("%s-%d", name, i/3+1)
		}
		servers[name] = base[i%3]
	}
	data, _ := json.Marshal(map[string]any{"mcpServers": servers})
	if err := os.MkdirAll(filepath.Join(home, "MCPs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "MCPs", "servers.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// TestToolsListTokenBudget counts the bridge's whole tools/list result with
// real tokenizers for 1, 3 and 20 configured servers: at most 300 tokens,
// and the same count whatever is configured.
func TestToolsListTokenBudget(t *testing.T) {
	t.Parallel()
	onEngine(t, "podman", func(t *testing.T, e testEngine) {
		var texts []string
		for _, n := range []int{1, 3, 20} {
			home := homeWithServers(t, n)
			cs := connectBridge(t, e.Name(), "HOME="+home)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(res)
			texts = append(texts, string(raw))
			// The servers are configured: discovery must see all n.
			text, isErr := runPython(t, cs, map[string]any{"code": "from mcp import runtime\nprint(len(runtime.discovered_servers()))"})
			if isErr || text != fmt.Sprint(n) {
				t.Fatalf("%d servers configured, discovered_servers: %q", n, text)
			}
		}
		counts := countTokens(t, texts...)
		t.Logf("tools/list tokens for 1, 3, 20 servers: %+v", counts)
		for i, c := range counts {
			if c.CL100K > 300 || c.O200K > 300 {
				t.Errorf("tools/list is %+v tokens, over 300:\n%s", c, texts[i])
			}
			if c != counts[0] {
				t.Errorf("tools/list tokens change with the configured servers: %+v", counts)
			}
		}
	})
}
