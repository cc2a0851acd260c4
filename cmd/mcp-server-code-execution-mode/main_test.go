package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

func runArgs(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, io.NopCloser(strings.NewReader("")), nopWriteCloser{&out}, &errb, func(k string) string { return env[k] })
	return out.String(), errb.String(), code
}

func TestCommands(t *testing.T) {
	tests := []struct {
		args      []string
		env       map[string]string
		code      int
		out, errs string
		notErrs   string // must not appear on stderr
	}{
		{args: nil, code: 2, errs: "usage:"},
		{args: []string{"version"}, code: 0, out: "mcp-server-code-execution-mode dev"},
		{args: []string{"help"}, code: 0, out: "commands:"},
		{args: []string{"frobnicate"}, code: 2, errs: `unknown command "frobnicate"`},
		{args: []string{"run", "extra"}, code: 2, errs: "run takes no arguments"},
		{args: []string{"run"}, env: map[string]string{"MCP_BRIDGE_TIMEOUT": "soon"}, code: 2, errs: "MCP_BRIDGE_TIMEOUT"},
		{args: []string{"run"}, env: map[string]string{"MCP_BRIDGE_MEMORY": "lots"}, code: 2, errs: "MCP_BRIDGE_MEMORY"},
		{args: []string{"exec", "-nope"}, code: 2, errs: "flag provided but not defined"},
		{args: []string{"exec", "-c", "print(1)"}, env: map[string]string{"MCP_BRIDGE_PIDS": "many"}, code: 125, errs: `MCP_BRIDGE_PIDS="many"`},
		{args: []string{"exec", "-c", "print(1)"}, env: map[string]string{"MCP_BRIDGE_LOG_LEVEL": "chatty"}, code: 125, errs: "MCP_BRIDGE_LOG_LEVEL"},
		{args: []string{"run"}, env: map[string]string{"MCP_BRIDGE_LOG_LEVEL": "chatty"}, code: 2, errs: `MCP_BRIDGE_LOG_LEVEL="chatty"`},
		// The original's Python level names start the bridge (here it
		// stops at once: the client's stdin is empty).
		{args: []string{"run"}, env: map[string]string{"MCP_BRIDGE_LOG_LEVEL": "WARNING"}, code: 0, notErrs: "level=INFO"},
		{args: []string{"run"}, env: map[string]string{"MCP_BRIDGE_LOG_LEVEL": "CRITICAL"}, code: 0, notErrs: "level="},
		{args: []string{"run"}, env: map[string]string{"MCP_BRIDGE_LOG_LEVEL": "NOTSET"}, code: 0, errs: "serving MCP over stdio"},
		// A value the original took as something else starts the bridge,
		// with a warning naming it.
		{args: []string{"run"}, env: map[string]string{"MCP_BRIDGE_OUTPUT_MODE": "json", "MCP_BRIDGE_POOL_SIZE": "0"}, code: 0, errs: `MCP_BRIDGE_OUTPUT_MODE=\"json\": taken as toon`},
		// JSON logs: one object per line.
		{args: []string{"run"}, env: map[string]string{"MCP_BRIDGE_LOG_FORMAT": "json", "MCP_BRIDGE_POOL_SIZE": "0"}, code: 0, errs: `"level":"INFO","msg":"serving MCP over stdio"`},
		{args: []string{"run"}, env: map[string]string{"MCP_BRIDGE_LOG_FORMAT": "xml"}, code: 2, errs: `MCP_BRIDGE_LOG_FORMAT="xml"`},
		// serve refuses before it listens.
		{args: []string{"help"}, code: 0, out: "serve -http ADDR"},
		{args: []string{"serve"}, code: 2, errs: "serve: -http ADDR is required"},
		{args: []string{"serve", "-nope"}, code: 2, errs: "flag provided but not defined: -nope"},
		{args: []string{"serve", "-http", "127.0.0.1:0", "extra"}, code: 2, errs: `unexpected arguments ["extra"]`},
		{args: []string{"serve", "-http", "127.0.0.1:0", "-tls-cert", "cert.pem"}, code: 2, errs: "-tls-cert and -tls-key go together"},
		{args: []string{"serve", "-tls-key", "key.pem", "-http", "127.0.0.1:0"}, code: 2, errs: "-tls-cert and -tls-key go together"},
		{args: []string{"serve", "-http", "127.0.0.1:0", "-tls-cert", "/nonexistent/cert.pem", "-tls-key", "/nonexistent/key.pem"}, code: 2, errs: "loading the TLS certificate"},
		{args: []string{"serve", "-http", ":0"}, code: 2, errs: "listening on :0: serving beyond loopback needs a bearer token (MCP_BRIDGE_HTTP_TOKEN)"},
		{args: []string{"serve", "-http", "0.0.0.0:0"}, code: 2, errs: "MCP_BRIDGE_HTTP_TOKEN"},
		{args: []string{"serve", "-http", "0.0.0.0:0"}, env: map[string]string{"MCP_BRIDGE_HTTP_TOKEN": "tooshort"}, code: 2, errs: "MCP_BRIDGE_HTTP_TOKEN", notErrs: "tooshort"},
		{args: []string{"serve", "-http", "127.0.0.1:0"}, env: map[string]string{"MCP_BRIDGE_MAX_SESSIONS": "none"}, code: 2, errs: `not starting: invalid settings: MCP_BRIDGE_MAX_SESSIONS="none"`},
		{args: []string{"serve", "-http", "127.0.0.1:0"}, env: map[string]string{"MCP_BRIDGE_HTTP_ALLOWED_ORIGINS": "evil.example"}, code: 2, errs: "MCP_BRIDGE_HTTP_ALLOWED_ORIGINS"},
		{args: []string{"serve", "-http", "127.0.0.1:0"}, env: map[string]string{"MCP_BRIDGE_POOL_SIZE": "-1"}, code: 2, errs: "MCP_BRIDGE_POOL_SIZE"},
		// An audit log that cannot be opened stops the bridge at start.
		{args: []string{"run"}, env: map[string]string{"MCP_BRIDGE_AUDIT_LOG": "/", "MCP_BRIDGE_POOL_SIZE": "0"}, code: 2, errs: "MCP_BRIDGE_AUDIT_LOG=/: opening audit log: open /: is a directory"},
		{args: []string{"serve", "-http", "127.0.0.1:0"}, env: map[string]string{"MCP_BRIDGE_AUDIT_LOG": "/nonexistent/dir/audit.jsonl"}, code: 2, errs: "not starting: MCP_BRIDGE_AUDIT_LOG=/nonexistent/dir/audit.jsonl: opening audit log"},
		{args: []string{"run"}, env: map[string]string{"MCP_BRIDGE_AUDIT_MAX_BYTES": "tiny"}, code: 2, errs: "MCP_BRIDGE_AUDIT_MAX_BYTES"},
	}
	for _, tt := range tests {
		out, errs, code := runArgs(t, tt.env, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errs, tt.errs) ||
			tt.notErrs != "" && strings.Contains(errs, tt.notErrs) {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want code %d, stdout ~%q, stderr ~%q",
				tt.args, code, out, errs, tt.code, tt.out, tt.errs)
		}
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// TestAuditLogUnwritable: an audit log that cannot be opened stops run
// with one error naming the setting, the path and the fix.
func TestAuditLogUnwritable(t *testing.T) {
	notDir := t.TempDir() + "/a-file"
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	path := notDir + "/audit.jsonl"
	_, errs, code := runArgs(t, map[string]string{"MCP_BRIDGE_AUDIT_LOG": path, "MCP_BRIDGE_RUNTIME": "docker", "DOCKER_HOST": "unix:///nonexistent.sock"}, "run")
	for _, want := range []string{"MCP_BRIDGE_AUDIT_LOG=" + path, "not a directory", "a directory this user can write, such as ~/MCPs/audit.jsonl, or unset MCP_BRIDGE_AUDIT_LOG"} {
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, errs)
		}
	}
}
