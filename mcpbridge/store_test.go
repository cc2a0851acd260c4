package mcpbridge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

func TestStoreOutlivesTheBridge(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	reg := func() *discovery.Registry {
		return discovery.NewRegistry(discovery.Options{Home: home, Cwd: t.TempDir()})
	}
	cs, br := connectClient(t, Options{Registry: reg()})
	_, text, _ := call(t, cs, map[string]any{"code": `info = save_memory("plan", {"steps": [1, 2]}, metadata={"by": "test"})
print(info["key"], info["size"] > 0, memory_exists("plan"), memory_exists("nope"))
def double(x):
    """Doubles x."""
    return 2 * x
print(save_tool(double))
from mcp import runtime
print(runtime.load_memory("plan")["steps"], list_memories())`})
	if text != "plan True True False\ndouble\n[1, 2] ['plan']" {
		t.Fatalf("first bridge: %q", text)
	}
	_, text, _ = call(t, cs, map[string]any{"code": `for bad in ("../escape", "a/b", ".hidden", ""):
    try:
        save_memory(bad, 1)
    except MCPError as e:
        print("refused", repr(bad))
try:
    save_memory("obj", object())
except TypeError as e:
    print("TypeError")
try:
    update_memory("missing", 1)
except MCPError as e:
    print(e)`})
	if text != "refused '../escape'\nrefused 'a/b'\nrefused '.hidden'\nrefused ''\nTypeError\nmemory \"missing\" does not exist" {
		t.Fatalf("bad input: %q", text)
	}
	cs.Close()
	br.Close()
	if _, err := os.Stat(filepath.Join(home, "MCPs", "memory", "plan.json")); err != nil {
		t.Fatalf("memory not on the host: %v", err)
	}

	cs2, _ := connectClient(t, Options{Registry: reg()})
	_, text, _ = call(t, cs2, map[string]any{"code": `print(load_memory("plan"), double(21), double.__doc__)
print(get_memory_info("plan")["metadata"], load_memory("gone", "default"))
update_memory("plan", "v2")
print(load_memory("plan"), get_memory_info("plan")["metadata"], delete_memory("plan"), delete_memory("plan"))`})
	if !strings.HasPrefix(text, "{'steps': [1, 2]} 42 Doubles x.\n{'by': 'test'} default\nv2 {'by': 'test'} True False") {
		t.Fatalf("second bridge: %q", text)
	}
}
