package mcpbridge

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// rpcSeeds are RPC payloads as the sandbox API sends them
// (sandbox_api.py), and as hostile code might.
var rpcSeeds = []string{
	`{"type":"list_servers"}`,
	`{"type":"discovered_servers"}`,
	`{"type":"list_tools","server":"everything"}`,
	`{"type":"call_tool","server":"everything","tool":"echo","arguments":{"message":"hi"}}`,
	`{"type":"query_tool_docs","server":"everything","tool":"echo","detail":"full"}`,
	`{"type":"search_tool_docs","query":"read a file's contents","limit":3,"detail":"summary"}`,
	`{"type":"memory","op":"save","key":"plan","value":{"steps":[1,2]},"metadata":{"by":"test"}}`,
	`{"type":"memory","op":"update","key":"plan","value":"v2"}`,
	`{"type":"memory","op":"load","key":"plan"}`,
	`{"type":"memory","op":"info","key":"plan"}`,
	`{"type":"memory","op":"exists","key":"plan"}`,
	`{"type":"memory","op":"list"}`,
	`{"type":"memory","op":"delete","key":"plan"}`,
	`{"type":"save_tool","name":"double","source":"def double(x):\n    return 2 * x\n"}`,
	// Hostile or broken.
	`{"type":"memory","op":"save","key":"../../escape","value":1}`,
	`{"type":"memory","op":"save","key":"/etc/passwd","value":1}`,
	`{"type":"memory","op":"save","key":"a\u0000b","value":1}`,
	`{"type":"memory","op":"save","key":".hidden","value":1}`,
	`{"type":"save_tool","name":"../x","source":"x"}`,
	`{"type":"save_tool","name":"ok","source":null}`,
	`{"type":"call_tool","server":"","tool":""}`,
	`{"type":"call_tool","server":"everything","tool":"echo","arguments":[1]}`,
	`{"type":"search_tool_docs","query":"","limit":-5}`,
	`{"type":"search_tool_docs","query":"x","limit":99999999999}`,
	`{"type":"query_tool_docs","server":"nope","detail":"everything"}`,
	`{"type":7}`, `{"type":null}`, `{}`, `[]`, `null`, `"list_servers"`, `{"type":"memory","op":"drop"}`,
}

// FuzzRPCHandler feeds arbitrary payloads to the handler that answers the
// sandbox's RPCs, on a bridge whose state directory is a temporary one
// and whose session has loaded a server that is not configured: it never
// panics, an answer encodes as JSON, an error says something, and no file
// appears outside the state directory's memory/ and tools/ under a name
// a key check allows.
func FuzzRPCHandler(f *testing.F) {
	for _, s := range rpcSeeds {
		f.Add([]byte(s))
	}
	home := f.TempDir()
	reg := discovery.NewRegistry(discovery.Options{Home: home, Cwd: f.TempDir()})
	b := New(nil, &Options{Registry: reg})
	defer b.Close()
	cs := b.newClientSession()
	cs.state.add([]string{"everything"})
	handle := b.rpcHandler(cs)
	stateDir := reg.StateDir()
	f.Fuzz(func(t *testing.T, payload []byte) {
		res, err := handle(context.Background(), json.RawMessage(payload))
		if err != nil {
			if msg := err.Error(); msg == "" || !utf8.ValidString(msg) && utf8.ValidString(string(payload)) {
				t.Fatalf("an empty or garbled error for %q: %q", payload, msg)
			}
		} else if _, err := json.Marshal(res); err != nil {
			t.Fatalf("an answer to %q that does not encode: %v", payload, err)
		}
		filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path == home {
				return nil
			}
			rel, _ := filepath.Rel(stateDir, path)
			dir, name := filepath.Split(rel)
			switch {
			case rel == "memory" || rel == "tools" || path == stateDir:
			case dir == "memory/" && strings.HasSuffix(name, ".json") && checkKey("", strings.TrimSuffix(name, ".json")) == nil:
			case dir == "tools/" && strings.HasSuffix(name, ".py") && checkKey("", strings.TrimSuffix(name, ".py")) == nil:
			case strings.HasSuffix(name, ".tmp"):
				// writeFile's temporary file, renamed before it returns.
				t.Fatalf("a temporary file left behind: %s", path)
			default:
				t.Fatalf("%q wrote %s, outside memory/ and tools/ or under a refused name", payload, path)
			}
			return nil
		})
	})
}
