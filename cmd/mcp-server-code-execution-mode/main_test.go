package main

import (
	"bytes"
	"context"
	"io"
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
