// Package entrypoint is the Python runtime that runs inside a sandbox
// container and its host-side driver.
//
// The runtime (runtime/*.py, embedded) keeps one interpreter alive per
// sandbox; a Session starts it on an engine, speaks the frame protocol of
// PROTOCOL.md with it, and turns code into Results. Nothing is mounted
// from the host: the runtime travels over the container's stdin behind a
// tiny bootstrap, so a remote engine works.
package entrypoint

import (
	"embed"
	"encoding/json"
	"strconv"
	"strings"
)

// runtimeFiles holds the runtime's Python modules: runtime/runtime.py,
// the main program, and the modules of runtimeModules.
//
//go:embed runtime/*.py
var runtimeFiles embed.FS

// runtimeModules are the runtime's modules but its main program, in the
// order they are installed (a module imports only those before it): each
// is runtime/<name>.py, installed as the module mcp_sandbox_<name>.
var runtimeModules = []string{"outputs", "channel", "reaper", "limits", "executor", "display", "rpc", "egress"}

// protocolVersion is the version of the frame protocol (PROTOCOL.md)
// this package speaks; the runtime says its own in its ready frame.
const protocolVersion = 7

// bootstrap reads the header "MCPRT <length>\n" and then exactly that many
// bytes of runtime source from fd 0, without read-ahead, and runs it.
const bootstrap = `import os, time
_t0 = time.time()
def _read(n):
    b = b""
    while len(b) < n:
        c = os.read(0, n - len(b))
        if not c:
            raise SystemExit("mcp bootstrap: stdin closed before the runtime arrived")
        b += c
    return b
h = b""
while not h.endswith(b"\n"):
    h += _read(1)
    if len(h) > 64:
        raise SystemExit("mcp bootstrap: bad header")
magic, n = h.split()
if magic != b"MCPRT":
    raise SystemExit("mcp bootstrap: bad header")
src = _read(int(n))
exec(compile(src, "<mcp-runtime>", "exec"), {"__name__": "__mcp_runtime__", "__builtins__": __builtins__, "__mcp_boot__": _t0})
`

// command is the container command of a sandbox: the bootstrap, told it
// runs in a sandbox.
func command() []string {
	return []string{"python3", "-u", "-c", bootstrap, "sandbox"}
}

// runtimeProgram is the source the bootstrap runs: a prelude that
// installs each module of runtimeModules from a string literal (a JSON
// string is a valid Python one), compiled as "<mcp-<name>>", then the main
// program, runtime.py.
var runtimeProgram = func() []byte {
	var prelude strings.Builder
	prelude.WriteString("import sys as _sys, types as _types\n")
	prelude.WriteString("for _name, _file, _source in (\n")
	for _, name := range runtimeModules {
		literal, err := json.Marshal(readRuntimeFile(name + ".py"))
		if err != nil {
			panic(err) // a string always encodes
		}
		prelude.WriteString("    (\"mcp_sandbox_" + name + "\", \"<mcp-" + name + ">\", " + string(literal) + "),\n")
	}
	prelude.WriteString("):\n" +
		"    _module = _types.ModuleType(_name)\n" +
		"    _sys.modules[_name] = _module\n" +
		"    exec(compile(_source, _file, \"exec\"), _module.__dict__)\n" +
		"del _sys, _types, _name, _file, _source, _module\n")
	return append([]byte(prelude.String()), readRuntimeFile("runtime.py")...)
}()

// readRuntimeFile returns the embedded runtime/<name>.
func readRuntimeFile(name string) string {
	b, err := runtimeFiles.ReadFile("runtime/" + name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return string(b)
}

// runtimePayload is what the session writes to a new container's stdin.
func runtimePayload() []byte {
	p := []byte("MCPRT " + strconv.Itoa(len(runtimeProgram)) + "\n")
	return append(p, runtimeProgram...)
}
