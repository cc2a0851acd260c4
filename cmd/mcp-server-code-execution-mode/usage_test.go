package main

import (
	"strings"
	"testing"
)

// TestCommandHelp checks that -h (and -help, --help) of every command
// prints its usage and flags on stdout and exits 0, before any setting
// is read: an invalid one does not hide the help.
func TestCommandHelp(t *testing.T) {
	bad := map[string]string{"MCP_BRIDGE_MEMORY": "lots"}
	for cmd, wants := range map[string][]string{
		"exec":    {"usage: mcp-server-code-execution-mode exec [-c CODE", "-timeout duration", "(default 30s)", "-json"},
		"run":     {"usage: mcp-server-code-execution-mode run\n", "stdio"},
		"serve":   {"usage: mcp-server-code-execution-mode serve -http ADDR", "-tls-cert string", "-tls-key"},
		"doctor":  {"usage: mcp-server-code-execution-mode doctor [-json]", "-timeout duration", "(default 30s)"},
		"version": {"usage: mcp-server-code-execution-mode version\n", "Print the version."},
		"pull":    {"usage: mcp-server-code-execution-mode pull [-image REF]", "-timeout duration", "(default 30m0s)"},
	} {
		for _, h := range []string{"-h", "-help", "--help"} {
			out, errs, code := runArgs(t, bad, cmd, h)
			if code != 0 || errs != "" {
				t.Errorf("%s %s: code %d, stderr %q; want 0 and nothing", cmd, h, code, errs)
			}
			for _, want := range append(wants, "docs/SETTINGS.md") {
				if !strings.Contains(out, want) {
					t.Errorf("%s %s: stdout lacks %q:\n%s", cmd, h, want, out)
				}
			}
		}
	}
}

// TestCommandBadFlag checks that a flag a command does not define is
// named on stderr, with the usage, and exits 2.
func TestCommandBadFlag(t *testing.T) {
	for _, cmd := range []string{"exec", "run", "serve", "doctor", "version"} {
		out, errs, code := runArgs(t, nil, cmd, "-nope")
		if code != 2 || out != "" || !strings.Contains(errs, cmd+": flag provided but not defined: -nope") ||
			!strings.Contains(errs, "usage: mcp-server-code-execution-mode "+cmd) {
			t.Errorf("%s -nope: code %d, stdout %q, stderr %q", cmd, code, out, errs)
		}
	}
}
