// Package entrypoint is the Python runtime that runs inside a sandbox
// container and its host-side driver.
//
// The runtime (runtime.py, embedded) keeps one interpreter alive per
// sandbox; a Session starts it on an engine, speaks the frame protocol of
// PROTOCOL.md with it, and turns code into Results. Nothing is mounted
// from the host: the runtime travels over the container's stdin behind a
// tiny bootstrap, so a remote engine works.
package entrypoint

import (
	_ "embed"
	"encoding/json"
	"strconv"
)

//go:embed runtime.py
var runtimeSource []byte

// outputsSource is the runtime's module of rich outputs (images, figures,
// files out), sent ahead of the runtime as the module mcp_sandbox_outputs.
//
//go:embed outputs.py
var outputsSource string

// protocolVersion is the version of the frame protocol (PROTOCOL.md)
// this package speaks; the runtime says its own in its ready frame.
const protocolVersion = 4

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
// installs the outputs module from a string literal (a JSON string is a
// valid Python one), then the runtime.
var runtimeProgram = func() []byte {
	literal, err := json.Marshal(outputsSource)
	if err != nil {
		panic(err) // a string always encodes
	}
	prelude := "import sys as _sys, types as _types\n" +
		"_outputs = _types.ModuleType(\"mcp_sandbox_outputs\")\n" +
		"_sys.modules[\"mcp_sandbox_outputs\"] = _outputs\n" +
		"exec(compile(" + string(literal) + ", \"<mcp-outputs>\", \"exec\"), _outputs.__dict__)\n" +
		"del _sys, _types, _outputs\n"
	return append([]byte(prelude), runtimeSource...)
}()

// runtimePayload is what the session writes to a new container's stdin.
func runtimePayload() []byte {
	p := []byte("MCPRT " + strconv.Itoa(len(runtimeProgram)) + "\n")
	return append(p, runtimeProgram...)
}
