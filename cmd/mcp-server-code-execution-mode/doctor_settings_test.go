package main

import (
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
)

// secretEnv sets the secrets doctor must not show, a setting of each
// kind, and a deprecated name.
var secretEnv = map[string]string{
	"MCP_BRIDGE_HTTP_TOKEN":     "client-token-0123456789abcdef",
	"MCP_BRIDGE_CONSOLE_TOKEN":  "console-token-0123456789abcdef0123456789",
	"MCP_BRIDGE_HANDLE_KEY":     "handle-key-0123456789abcdef0123456789ab",
	"MCP_BRIDGE_IMAGE":          " python:3.12-slim ",
	"MCP_BRIDGE_SEARCH_ALIASES": "/tmp/aliases.json",
	"DOCKER_HOST":               "unix:///var/run/docker.sock",
}

// TestDoctorSettings checks the settings doctor lists, in its text and
// its JSON: those set, with where they came from, the secrets hidden,
// and how many others have their defaults; also when the settings are
// invalid.
func TestDoctorSettings(t *testing.T) {
	total := len(config.Settings())
	for _, extra := range []map[string]string{nil, {"MCP_BRIDGE_MEMORY": "lots"}} {
		env := map[string]string{}
		for k, v := range secretEnv {
			env[k] = v
		}
		for k, v := range extra {
			env[k] = v
		}
		text, _, _ := doctorWith(t, newFakeEngine(), env, nil)
		js, _, _ := doctorWith(t, newFakeEngine(), env, nil, "-json")
		for _, secret := range []string{"client-token", "console-token", "handle-key"} {
			if strings.Contains(text, secret) || strings.Contains(js, secret) {
				t.Errorf("%v: doctor shows a secret %s…:\n%s\n%s", extra, secret, text, js)
			}
		}
		for _, want := range []string{
			"      MCP_BRIDGE_HTTP_TOKEN      set (hidden)  (environment)\n",
			"      MCP_BRIDGE_IMAGE           python:3.12-slim  (environment)\n",
			"      MCP_BRIDGE_SEARCH_ALIASES  /tmp/aliases.json  (environment; deprecated: use MCP_BRIDGE_SEARCH_KEYWORDS)\n",
			"      DOCKER_HOST                unix:///var/run/docker.sock  (environment)\n",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%v: text lacks %q:\n%s", extra, want, text)
			}
		}
		rs := decodeReport(t, js)
		settings, _ := rs[0]["settings"].([]any)
		defaults, _ := rs[0]["defaults"].(float64)
		if rs[0]["check"] != "settings" || len(settings)+int(defaults) != total {
			t.Fatalf("%v: %d settings set and %v at their defaults; want %d in all: %v", extra, len(settings), rs[0]["defaults"], total, rs[0])
		}
		seen := map[string]bool{}
		for _, s := range settings {
			s := s.(map[string]any)
			seen[s["name"].(string)] = true
			if s["source"] != config.SourceEnvironment || s["group"] == "" {
				t.Errorf("%v: %v", extra, s)
			}
			if strings.Contains(s["name"].(string), "TOKEN") && s["value"] != config.Hidden {
				t.Errorf("%v: %v is not hidden", extra, s)
			}
		}
		for k := range env {
			if !seen[k] {
				t.Errorf("%v: %s is not listed: %v", extra, k, settings)
			}
		}
	}
}

func TestEffectiveNotes(t *testing.T) {
	env := map[string]string{"MCP_BRIDGE_SEARCH_ALIASES": "a.json", "MCP_BRIDGE_SEARCH_KEYWORDS": "k.json",
		"MCP_BRIDGE_PACKAGES": "numpy\n" + strings.Repeat("x", 200)}
	for _, v := range config.Effective(func(k string) string { return env[k] }) {
		switch v.Name {
		case "MCP_BRIDGE_SEARCH_ALIASES":
			if v.Note != "ignored: MCP_BRIDGE_SEARCH_KEYWORDS is set" {
				t.Errorf("note %q", v.Note)
			}
		case "MCP_BRIDGE_PACKAGES":
			if !strings.HasPrefix(v.Shown, `"numpy\n`) || !strings.HasSuffix(v.Shown, `…"`) {
				t.Errorf("shown %q", v.Shown)
			}
		case "MCP_BRIDGE_IMAGE":
			if v.Source != config.SourceDefault || v.Shown != "" {
				t.Errorf("%+v", v)
			}
		}
	}
}
