// Command mcp-server-code-execution-mode runs Python in hardened sandbox
// containers on Docker, Podman or Kubernetes.
//
//	mcp-server-code-execution-mode exec [-c CODE | -f FILE] [-out DIR] [-json] [-timeout 30s]
//	mcp-server-code-execution-mode run
//	mcp-server-code-execution-mode serve -http ADDR [-tls-cert F -tls-key F]
//	mcp-server-code-execution-mode doctor [-json] [-timeout 30s]
//	mcp-server-code-execution-mode pull [-image REF] [-timeout 30m]
//	mcp-server-code-execution-mode setup CLIENT [-name NAME] [-dry-run] [-remove] [-move-servers | -keep-servers]
//	mcp-server-code-execution-mode version
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: mcp-server-code-execution-mode <command> [flags]

commands:
  exec [-c CODE | -f FILE]      run Python code (from -c, -f FILE, else stdin; -f -:
       [-out DIR] [-json]       stdin) in a hardened sandbox, print its output, exit
       [-timeout D]             with its status; -out DIR keeps its images and files
                                of /workspace/out, -json prints the whole result
  run                           serve MCP over stdio (the run_python tool)
  serve -http ADDR              serve MCP over Streamable HTTP at ADDR/mcp, one
        [-tls-cert F -tls-key F]  sandbox per session (MCP_BRIDGE_HTTP_TOKEN needed
                                beyond loopback)
  pull [-image REF]             pull the sandbox image now, showing its progress
                                (run and serve start it when they start)
  doctor [-json] [-timeout D]   check the setup: engine, image, a hardened probe
                                container, its OCI runtime, the MCP server config
                                files and servers; exit 1 when a check fails
  setup CLIENT [-dry-run]       write CLIENT's MCP configuration (claude-code,
        [-remove] [-name NAME]  claude-desktop, cursor, vscode) to start this
        [-move-servers |        bridge, keeping its other servers (or moving them
         -keep-servers]         into the bridge's own); setup -h says more
  version                       print the version

Each command's -h prints its flags. Settings come from MCP_BRIDGE_* environment
variables: docs/SETTINGS.md lists them, doctor shows those set.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A client that goes while the bridge writes to it (a progress
	// notification mid-stream) must not kill it with SIGPIPE: the write
	// fails with EPIPE instead, the transport ends and the bridge stops
	// its calls and exits cleanly. Notify, not Ignore: the servers the
	// bridge starts get SIGPIPE's default again.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "exec":
		return execCommand(ctx, args[1:], stdin, stdout, stderr, getenv)
	case "run":
		return runCommand(ctx, args[1:], stdin, stdout, stderr, getenv)
	case "serve":
		return serveCommand(ctx, args[1:], stdout, stderr, getenv, nil)
	case "pull":
		return pullCommand(ctx, args[1:], stdout, stderr, getenv)
	case "doctor":
		return doctorCommand(ctx, args[1:], stdout, stderr, getenv)
	case "setup":
		return setupCommand(ctx, args[1:], stdin, stdout, stderr, getenv)
	case "version", "--version", "-version":
		return versionCommand(args[1:], stdout, stderr)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
