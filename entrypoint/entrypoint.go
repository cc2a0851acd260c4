// Package entrypoint is the Python runtime that runs inside a sandbox
// container and its host-side driver.
//
// The runtime (runtime/*.py, embedded, shipped with the sandbox API of
// sandbox_api/) keeps one interpreter alive per sandbox; a Session starts
// it on an engine, speaks the frame protocol of PROTOCOL.md with it, and
// turns code into Results. Nothing is mounted from the host: the runtime
// travels over the container's stdin behind a tiny bootstrap, so a remote
// engine works.
package entrypoint

import (
	"embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// runtimeFiles holds the Python modules sent to a sandbox: the runtime's
// (runtime/runtime.py, the main program, and the modules of
// runtimeModules) and the sandbox API (sandbox_api/sandbox_api.py).
//
//go:embed runtime/*.py sandbox_api/sandbox_api.py
var runtimeFiles embed.FS

// runtimeModules are the runtime's modules but its main program: each is
// runtime/<name>.py, imported as the module mcp_sandbox_<name>. They are
// listed so that a module imports only those before it (no cycle).
var runtimeModules = []string{
	"outputs", "channel", "reaper", "limits", "executor", "display", "rpc", "egress",
	"stdio", "admission", "relay", "lane", "dispatch",
}

// sandboxAPIModule is the module the sandbox API (sandbox_api/sandbox_api.py,
// the helpers the bridge installs in every interpreter's globals) is
// shipped as with the runtime. Nothing of the runtime imports it: the
// bridge's init code does (mcpbridge's installCode), so an interpreter
// without the bridge never compiles it. It is compiled as
// "<mcp-sandbox-api>", with its lines known to tracebacks.
const sandboxAPIModule = "mcp_sandbox_api"

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

// prelude is the start of the program the bootstrap runs: it puts first
// on sys.meta_path a finder of the modules sent with the runtime, whose
// table (in place of the %s) maps each module's name to the file name it
// is compiled under, its source and whether tracebacks show its lines
// (kept in linecache). A module is compiled when it is first imported,
// by the main program or by code run later. The prelude leaves none of
// its names behind.
const prelude = `import sys as _sys, importlib.machinery as _machinery
class _Shipped:
    """Finds the modules the host sent with the runtime; compiles each
    when it is first imported."""

    def __init__(self, spec, modules):
        self.spec = spec
        self.modules = modules

    def find_spec(self, name, path=None, target=None):
        return self.spec(name, self) if name in self.modules else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        filename, source, lines = self.modules[module.__name__]
        if lines:
            import linecache
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)
_sys.meta_path.insert(0, _Shipped(_machinery.ModuleSpec, {
%s}))
del _sys, _machinery, _Shipped
`

// runtimeProgram is the source the bootstrap runs: the prelude, whose
// finder has each module of runtimeModules as mcp_sandbox_<name>,
// compiled as "<mcp-<name>>", and the sandbox API, then the main
// program, runtime.py. Sources are JSON strings, which are valid Python
// ones.
var runtimeProgram = func() []byte {
	var table strings.Builder
	add := func(module, filename, file string, lines bool) {
		literal, err := json.Marshal(readRuntimeFile(file))
		if err != nil {
			panic(err) // a string always encodes
		}
		shown := "False"
		if lines {
			shown = "True"
		}
		fmt.Fprintf(&table, "    %q: (%q, %s, %s),\n", module, filename, literal, shown)
	}
	for _, name := range runtimeModules {
		add("mcp_sandbox_"+name, "<mcp-"+name+">", "runtime/"+name+".py", false)
	}
	add(sandboxAPIModule, "<mcp-sandbox-api>", "sandbox_api/sandbox_api.py", true)
	return append([]byte(fmt.Sprintf(prelude, table.String())), readRuntimeFile("runtime/runtime.py")...)
}()

// readRuntimeFile returns the embedded file at path (runtime/<name>.py,
// sandbox_api/sandbox_api.py).
func readRuntimeFile(path string) string {
	b, err := runtimeFiles.ReadFile(path)
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
