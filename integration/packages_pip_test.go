//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pipSourceCode imports the set's package and installs another live,
// printing both.
const pipSourceCode = `import mcpegresstest
from mcp import runtime
print(mcpegresstest.VALUE)
print(runtime.install_sync("mcplive"))
import mcplive
print(mcplive.V)`

// TestPipSources: packages install with no pip on the bridge's host
// (the bridge never looks for Debian's python3-pip-whl) on every engine.
// In the image without pip, a set and a live install run the pinned pip
// wheel, fetched from the index once through the gateway and kept in the
// state directory, where the next bridge finds it; in the image with pip
// (the data image's Debian pip) both run the image's own pip and nothing
// is fetched; an index that serves another file under the pinned wheel's
// name gets it refused, the install failing with both sums named and
// nothing kept.
func TestPipSources(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		name := e.Name()
		takePackageVolumes(t, name)
		ix := newTestIndex(t, map[string][]byte{
			"mcpegresstest-1.0-py3-none-any.whl": testWheel(t),
			"mcplive-1.0-py3-none-any.whl":       wheelWith(t, "mcplive", map[string][]byte{"mcplive/__init__.py": []byte("V = 7\n")}),
		})
		index := "MCP_BRIDGE_PIP_INDEX_URL=" + ix.URL + "/simple/"
		want := "42\nSuccessfully installed mcplive-1.0\n7"

		home := t.TempDir()
		kept := filepath.Join(home, "MCPs", "pip", pipWheelName)
		for i := range 2 {
			cs := connectBridge(t, name, "HOME="+home, index, "MCP_BRIDGE_PACKAGES=mcpegresstest", "MCP_BRIDGE_PIP_WHEEL=")
			if text, isErr := runPython(t, cs, map[string]any{"code": pipSourceCode, "timeout": 120}); isErr || text != want {
				t.Fatalf("bridge %d, the image without pip: %q", i+1, text)
			}
			cs.Close()
			if n := ix.pips.Load(); n != 1 {
				t.Errorf("bridge %d: pip's wheel was downloaded %d times, want once", i+1, n)
			}
			if data, err := os.ReadFile(kept); err != nil || len(data) != len(pipWheel(t)) {
				t.Errorf("bridge %d: the kept wheel: %d bytes, %v", i+1, len(data), err)
			}
		}

		cs := connectBridge(t, name, "HOME="+t.TempDir(), index, "MCP_BRIDGE_PACKAGES=mcpegresstest", "MCP_BRIDGE_IMAGE="+dataImage())
		if text, isErr := runPython(t, cs, map[string]any{"code": pipSourceCode, "timeout": 120}); isErr || text != want {
			t.Fatalf("the image with pip: %q", text)
		}
		if n := ix.pips.Load(); n != 1 {
			t.Errorf("with the image's own pip, pip's wheel was downloaded again (%d in all)", n)
		}

		forged := newTestIndex(t, map[string][]byte{"mcplive-1.0-py3-none-any.whl": ix.wheels["mcplive-1.0-py3-none-any.whl"]})
		forged.wheels[pipWheelName] = append(append([]byte{}, pipWheel(t)...), "appended"...)
		home = t.TempDir()
		cs = connectBridge(t, name, "HOME="+home, "MCP_BRIDGE_PIP_INDEX_URL="+forged.URL+"/simple/")
		text, isErr := runPython(t, cs, map[string]any{"code": "from mcp import runtime\ntry:\n    runtime.install_sync('mcplive')\nexcept runtime.InstallError as e:\n    print('InstallError:', e)", "timeout": 120})
		if isErr || !strings.Contains(text, "InstallError: ") || !strings.Contains(text, "not the pinned bdb1b08f") || !strings.Contains(text, "refused") {
			t.Errorf("a forged pip wheel: %q", text)
		}
		if _, err := os.Stat(filepath.Join(home, "MCPs", "pip", pipWheelName)); err == nil {
			t.Error("the forged wheel was kept")
		}
	})
}
