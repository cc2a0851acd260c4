package config

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/SETTINGS.md")

// readNames returns the variables Load reads from env, sorted.
func readNames(env map[string]string) []string {
	seen := map[string]bool{}
	Load(func(k string) string {
		seen[k] = true
		return env[k]
	})
	var names []string
	for k := range seen {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// TestSettingsRead checks that the settings table and Load agree: Load
// reads every setting described (but the engines' variables) and no
// other, whether the variables are unset or all set.
func TestSettingsRead(t *testing.T) {
	var want []string
	all := map[string]string{}
	for _, s := range Settings() {
		if !s.Engine {
			want = append(want, s.Name)
			all[s.Name] = "x"
		}
	}
	slices.Sort(want)
	read := map[string]bool{}
	for _, env := range []map[string]string{nil, all} {
		for _, name := range readNames(env) {
			read[name] = true
		}
	}
	for _, name := range want {
		if !read[name] {
			t.Errorf("%s is in the settings table but Load never reads it: remove it, or mark it Engine if an engine reads it", name)
		}
	}
	for name := range read {
		if !slices.Contains(want, name) {
			t.Errorf("Load reads %s, which the settings table does not describe", name)
		}
	}
}

// TestSettingsUndocumented checks that reading a variable the table
// does not describe fails at once.
func TestSettingsUndocumented(t *testing.T) {
	for _, name := range []string{"MCP_BRIDGE_NO_SUCH_SETTING", "DOCKER_HOST"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("reading %s did not panic", name)
				}
			}()
			r := &reader{getenv: func(string) string { return "" }}
			r.get(name)
		}()
	}
}

// TestSettingsDescribed checks each description: a group, a default, a
// line of help, a name of the bridge's unless an engine reads it, and a
// replacement that exists.
func TestSettingsDescribed(t *testing.T) {
	counts := map[Group]int{}
	for _, s := range Settings() {
		counts[s.Group]++
		switch {
		case s.Group < 0 || s.Group >= numGroups:
			t.Errorf("%s: group %d", s.Name, s.Group)
		case s.Default == "" || s.Help == "":
			t.Errorf("%s: want a default and a description", s.Name)
		case strings.Contains(s.Help, "\n") || strings.Contains(s.Default, "\n"):
			t.Errorf("%s: want one line", s.Name)
		case s.Engine == strings.HasPrefix(s.Name, "MCP_"):
			t.Errorf("%s: Engine is %v", s.Name, s.Engine)
		}
		if r, ok := Lookup(s.ReplacedBy); s.ReplacedBy != "" && (!ok || r.ReplacedBy != "") {
			t.Errorf("%s: replaced by %q, not a current setting", s.Name, s.ReplacedBy)
		}
	}
	for _, g := range Groups() {
		if counts[g] == 0 || g.Title() == "" || g.Intro() == "" {
			t.Errorf("group %d (%q): %d settings", g, g.Title(), counts[g])
		}
	}
	if n := counts[GroupEveryone]; n > 10 {
		t.Errorf("%d settings for everyone: keep it short", n)
	}
}

func TestSettingSecret(t *testing.T) {
	for name, want := range map[string]bool{
		EnvHTTPToken: true, EnvConsoleToken: true, EnvHandleKey: true, "CONTAINER_SSHKEY": true,
		"X_PASSWORD": true, "X_SECRET": true, EnvImage: false, EnvEgressCA: false, EnvConsoleSecureCookie: false,
	} {
		if got := (Setting{Name: name}).Secret(); got != want {
			t.Errorf("%s: Secret() = %v, want %v", name, got, want)
		}
	}
}

// TestSettingsDoc checks that docs/SETTINGS.md is SettingsMarkdown's;
// with -update it rewrites it.
func TestSettingsDoc(t *testing.T) {
	path := filepath.Join("..", "..", "..", filepath.FromSlash(SettingsDocPath))
	want := SettingsMarkdown()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("%s is not current (%v): regenerate it with\n\t%s", SettingsDocPath, err, SettingsDocCommand)
	}
	for _, s := range Settings() {
		if !strings.Contains(want, "| `"+s.Name+"`") {
			t.Errorf("%s is not in the table", s.Name)
		}
	}
}
