package config

import (
	"errors"
	"strings"
	"testing"
)

// TestLoadConsoleToken reads MCP_BRIDGE_CONSOLE_TOKEN: unset is no
// console; a short one, one with spaces, or the clients' own token is
// refused by name, without showing it.
func TestLoadConsoleToken(t *testing.T) {
	const console = "0123456789abcdef0123456789abcdef" // the shortest accepted
	const clients = "fedcba9876543210fedcba9876543210"
	c, err := Load(envOf(map[string]string{EnvConsoleToken: console, EnvHTTPToken: clients}))
	if err != nil || c.HTTP.ConsoleToken != console {
		t.Fatalf("Load = %v, %v; want the console token", c, err)
	}
	if c.HTTP.ConsoleSecureCookie {
		t.Errorf("%s unset: the cookie is Secure without TLS", EnvConsoleSecureCookie)
	}
	if c, err := Load(envOf(map[string]string{EnvConsoleToken: console, EnvConsoleSecureCookie: "1"})); err != nil || !c.HTTP.ConsoleSecureCookie {
		t.Errorf("%s=1: %+v, %v", EnvConsoleSecureCookie, c.HTTP, err)
	}
	if _, err := Load(envOf(map[string]string{EnvConsoleSecureCookie: "sometimes"})); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), EnvConsoleSecureCookie) {
		t.Errorf("%s=sometimes: %v, want an error naming it", EnvConsoleSecureCookie, err)
	}
	if c, err = Load(envOf(nil)); err != nil || c.HTTP.ConsoleToken != "" {
		t.Fatalf("unset: Load = %+v, %v; want no console", c, err)
	}
	for _, env := range []map[string]string{
		{EnvConsoleToken: console[:31]},
		{EnvConsoleToken: console[:16] + " " + console[16:]},
		{EnvConsoleToken: console, EnvHTTPToken: console},
	} {
		_, err := Load(envOf(env))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), EnvConsoleToken) {
			t.Errorf("%v: Load = %v, want an error naming %s", env, err, EnvConsoleToken)
		} else if strings.Contains(err.Error(), console[:16]) {
			t.Errorf("the error shows the token: %v", err)
		}
	}
}
