package podman

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// withPodmanSystemConfs makes the system-wide containers.conf files
// those of dir (usr.conf, then etc.conf with its etc.conf.d) for the
// test, instead of the host's.
func withPodmanSystemConfs(t *testing.T, dir string) (usr, etc string) {
	t.Helper()
	saved := podmanSystemConfs
	t.Cleanup(func() { podmanSystemConfs = saved })
	usr, etc = filepath.Join(dir, "usr.conf"), filepath.Join(dir, "etc.conf")
	podmanSystemConfs = []string{usr, etc}
	return usr, etc
}

// testPodmanConnections is a podman-connections.json as Podman 5 writes
// it: the default connection, a podman machine's, an ssh one with a key,
// a local one, one shadowing a containers.conf one, one without a URI.
const testPodmanConnections = `{"Connection":{"Default":"machine","Connections":{
	"machine":{"URI":"ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock","Identity":"/h/machine/key","IsMachine":true},
	"remote":{"URI":"ssh://me@build.example.com/run/podman/podman.sock","Identity":"/h/.ssh/id_ed25519"},
	"local":{"URI":"unix:///run/user/1000/podman/podman.sock"},
	"shadow":{"URI":"tcp://json:8080"},
	"nouri":{"Identity":"/k"}}},
	"Farm":{"List":{}}}
`

// testPodmanUserConf is a user's containers.conf as Podman 4 wrote
// connections.
const testPodmanUserConf = `[engine]
runtime = "crun"

[engine.service_destinations]
[engine.service_destinations.old]
uri = "ssh://old@host.example.com:2222/run/podman/podman.sock"
identity = "/h/.ssh/old"

[engine.service_destinations.shadow]
uri = "tcp://conf:8080"
`

// A podmanHome is a home directory laid out for the tests.
type podmanHome struct {
	dir, json, conf string
}

// newPodmanHome makes a home directory with ~/.config/containers holding
// podman-connections.json and containers.conf with the contents given
// ("": no such file).
func newPodmanHome(t *testing.T, json, conf string) podmanHome {
	t.Helper()
	h := podmanHome{dir: t.TempDir()}
	cfg := filepath.Join(h.dir, ".config", "containers")
	h.json, h.conf = filepath.Join(cfg, "podman-connections.json"), filepath.Join(cfg, "containers.conf")
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	if json != "" {
		writeFile(t, h.json, json)
	}
	if conf != "" {
		writeFile(t, h.conf, conf)
	}
	return h
}

// setUpPodmanFiles lays out the system's containers.conf files and the
// homes the tests use.
func setUpPodmanFiles(t *testing.T) (good podmanHome, usr, etc, dropA, dropB string) {
	t.Helper()
	sys := t.TempDir()
	usr, etc = withPodmanSystemConfs(t, sys)
	writeFile(t, usr, "[engine.service_destinations.sys]\nuri = \"tcp://usr:1\"\n")
	writeFile(t, etc, "[engine]\ncgroup_manager = \"cgroupfs\"\n[engine.service_destinations.sys]\nuri = \"tcp://etc:1\"\n")
	dropA, dropB = filepath.Join(etc+".d", "10-a.conf"), filepath.Join(etc+".d", "20-b.conf")
	writeFile(t, dropB, "[engine.service_destinations.dropin]\nuri = \"tcp://b:1\"\n")
	writeFile(t, dropA, "[engine.service_destinations.dropin]\nuri = \"tcp://a:1\"\n")
	writeFile(t, filepath.Join(etc+".d", "notes.txt"), "not toml [")
	good = newPodmanHome(t, testPodmanConnections, testPodmanUserConf)
	return good, usr, etc, dropA, dropB
}

func TestResolvePodmanEndpoint(t *testing.T) {
	good, usr, etc, dropA, dropB := setUpPodmanFiles(t)
	allConfs := strings.Join([]string{usr, etc, dropA, dropB, good.conf}, ", ")
	garbledJSON := newPodmanHome(t, `{"Connection": {"Default": `, testPodmanUserConf)
	garbledConf := newPodmanHome(t, testPodmanConnections, "[engine\nuri = 1\n")
	dirJSON := newPodmanHome(t, "", testPodmanUserConf)
	if err := os.Mkdir(dirJSON.json, 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "conns.json")
	writeFile(t, elsewhere, `{"Connection":{"Connections":{"elsewhere":{"URI":"tcp://elsewhere:1"}}}}`)
	onlyConf := filepath.Join(t.TempDir(), "only.conf")
	writeFile(t, onlyConf, "[engine.service_destinations.only]\nuri = \"tcp://only:1\"\n")
	override := filepath.Join(t.TempDir(), "override.conf")
	writeFile(t, override, "[engine.service_destinations.old]\nuri = \"tcp://override:1\"\n")
	xdg := t.TempDir()
	missing := filepath.Join(t.TempDir(), "missing.conf")

	for _, tt := range []struct {
		name     string
		opts     Options
		env      map[string]string
		named    bool
		uri      string
		identity string
		machine  bool
		conn     string
		source   string
		file     string
		warning  string // part of Warning
		err      string // the error, exactly when it starts with "=", else a part of it
	}{
		{name: "nothing named", env: map[string]string{"HOME": good.dir}},
		{name: "option URI beats everything",
			opts:  Options{URI: "unix:///opt.sock"},
			env:   map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "remote", "CONTAINER_HOST": "tcp://env:1"},
			named: true, uri: "unix:///opt.sock", source: podmanSourceOption},
		{name: "option URI and connection",
			opts: Options{URI: "unix:///opt.sock", Connection: "remote"},
			env:  map[string]string{"HOME": good.dir},
			err:  `=podman: both a URI (unix:///opt.sock) and a connection ("remote") are set; set one`},
		{name: "option connection beats CONTAINER_CONNECTION and CONTAINER_HOST",
			opts:  Options{Connection: "remote"},
			env:   map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "machine", "CONTAINER_HOST": "tcp://env:1"},
			named: true, uri: "ssh://me@build.example.com/run/podman/podman.sock", identity: "/h/.ssh/id_ed25519",
			conn: "remote", source: podmanSourceOption, file: good.json},
		{name: "CONTAINER_CONNECTION: a podman machine",
			env:   map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "machine"},
			named: true, uri: "ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock", identity: "/h/machine/key",
			machine: true, conn: "machine", source: podmanSourceConnectionEnv, file: good.json},
		{name: "CONTAINER_CONNECTION overrides CONTAINER_HOST, as for podman",
			env:   map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "local", "CONTAINER_HOST": "tcp://env:1"},
			named: true, uri: "unix:///run/user/1000/podman/podman.sock", conn: "local", source: podmanSourceConnectionEnv,
			file: good.json, warning: `CONTAINER_CONNECTION="local" overrides CONTAINER_HOST=tcp://env:1`},
		{name: "CONTAINER_HOST ssh with CONTAINER_SSHKEY",
			env:   map[string]string{"HOME": good.dir, "CONTAINER_HOST": "ssh://u@h/run/podman/podman.sock", "CONTAINER_SSHKEY": "/k/id"},
			named: true, uri: "ssh://u@h/run/podman/podman.sock", identity: "/k/id", source: podmanSourceHostEnv},
		{name: "CONTAINER_SSHKEY is for ssh only",
			env:   map[string]string{"HOME": good.dir, "CONTAINER_HOST": "tcp://h:1", "CONTAINER_SSHKEY": "/k/id"},
			named: true, uri: "tcp://h:1", source: podmanSourceHostEnv},
		{name: "CONTAINER_HOST does not read the files",
			env:   map[string]string{"HOME": garbledJSON.dir, "CONTAINER_HOST": "tcp://h:1"},
			named: true, uri: "tcp://h:1", source: podmanSourceHostEnv},
		{name: "a connection of the user's containers.conf",
			env:   map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "old"},
			named: true, uri: "ssh://old@host.example.com:2222/run/podman/podman.sock", identity: "/h/.ssh/old",
			conn: "old", source: podmanSourceConnectionEnv, file: good.conf},
		{name: "podman-connections.json hides containers.conf",
			env:   map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "shadow"},
			named: true, uri: "tcp://json:8080", conn: "shadow", source: podmanSourceConnectionEnv, file: good.json},
		{name: "/etc/containers/containers.conf after /usr/share's",
			env:   map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "sys"},
			named: true, uri: "tcp://etc:1", conn: "sys", source: podmanSourceConnectionEnv, file: etc},
		{name: "containers.conf.d in order",
			env:   map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "dropin"},
			named: true, uri: "tcp://b:1", conn: "dropin", source: podmanSourceConnectionEnv, file: dropB},
		{name: "XDG_CONFIG_HOME replaces ~/.config",
			env: map[string]string{"HOME": good.dir, "XDG_CONFIG_HOME": xdg, "CONTAINER_CONNECTION": "remote"},
			err: fmt.Sprintf(`=podman connection "remote": not found in %s (which does not exist) nor in [engine.service_destinations] of %s, %s, %s, %s (set by CONTAINER_CONNECTION)`,
				filepath.Join(xdg, "containers", "podman-connections.json"), usr, etc, dropA, dropB)},
		{name: "PODMAN_CONNECTIONS_CONF",
			env:   map[string]string{"HOME": good.dir, "PODMAN_CONNECTIONS_CONF": elsewhere, "CONTAINER_CONNECTION": "elsewhere"},
			named: true, uri: "tcp://elsewhere:1", conn: "elsewhere", source: podmanSourceConnectionEnv, file: elsewhere},
		{name: "PODMAN_CONNECTIONS_CONF replaces ~/.config/containers/podman-connections.json",
			env: map[string]string{"HOME": good.dir, "PODMAN_CONNECTIONS_CONF": elsewhere, "CONTAINER_CONNECTION": "remote"},
			err: fmt.Sprintf(`=podman connection "remote": not found in %s nor in [engine.service_destinations] of %s (set by CONTAINER_CONNECTION)`,
				elsewhere, allConfs)},
		{name: "CONTAINERS_CONF replaces the other containers.conf files",
			env:   map[string]string{"HOME": good.dir, "CONTAINERS_CONF": onlyConf, "CONTAINER_CONNECTION": "only"},
			named: true, uri: "tcp://only:1", conn: "only", source: podmanSourceConnectionEnv, file: onlyConf},
		{name: "CONTAINERS_CONF hides the user's",
			env: map[string]string{"HOME": good.dir, "CONTAINERS_CONF": onlyConf, "CONTAINER_CONNECTION": "old"},
			err: fmt.Sprintf(`=podman connection "old": not found in %s nor in [engine.service_destinations] of %s (set by CONTAINER_CONNECTION)`,
				good.json, onlyConf)},
		{name: "CONTAINERS_CONF missing",
			env: map[string]string{"HOME": good.dir, "CONTAINERS_CONF": missing, "CONTAINER_CONNECTION": "remote"},
			err: fmt.Sprintf(`=podman connection "remote": CONTAINERS_CONF=%s: no such file (set by CONTAINER_CONNECTION)`, missing)},
		{name: "CONTAINERS_CONF_OVERRIDE wins",
			env:   map[string]string{"HOME": good.dir, "CONTAINERS_CONF_OVERRIDE": override, "CONTAINER_CONNECTION": "old"},
			named: true, uri: "tcp://override:1", conn: "old", source: podmanSourceConnectionEnv, file: override},
		{name: "unknown CONTAINER_CONNECTION",
			env: map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "gone"},
			err: fmt.Sprintf(`=podman connection "gone": not found in %s nor in [engine.service_destinations] of %s (set by CONTAINER_CONNECTION)`,
				good.json, allConfs)},
		{name: "unknown CONTAINER_CONNECTION with CONTAINER_HOST set: still an error, as for podman",
			env: map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "gone", "CONTAINER_HOST": "tcp://h:1"},
			err: `podman connection "gone": not found in ` + good.json},
		{name: "unknown option connection",
			opts: Options{Connection: "gone"},
			env:  map[string]string{"HOME": good.dir},
			err:  `(set by Options.Connection)`},
		{name: "garbled podman-connections.json",
			env: map[string]string{"HOME": garbledJSON.dir, "CONTAINER_CONNECTION": "remote"},
			err: fmt.Sprintf(`=podman connection "remote": parsing %s: unexpected EOF (set by CONTAINER_CONNECTION)`, garbledJSON.json)},
		{name: "garbled containers.conf",
			env: map[string]string{"HOME": garbledConf.dir, "CONTAINER_CONNECTION": "remote"},
			err: fmt.Sprintf(`podman connection "remote": parsing %s: toml: line `, garbledConf.conf)},
		{name: "unreadable podman-connections.json",
			env: map[string]string{"HOME": dirJSON.dir, "CONTAINER_CONNECTION": "old"},
			err: fmt.Sprintf(`=podman connection "old": reading %s: is a directory (set by CONTAINER_CONNECTION)`, dirJSON.json)},
		{name: "a connection without a URI",
			env: map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "nouri"},
			err: fmt.Sprintf(`=podman connection "nouri": %s gives it no URI (set by CONTAINER_CONNECTION)`, good.json)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			ep, named, err := resolvePodmanEndpoint(&opts, mapGetenv(tt.env))
			if tt.err != "" {
				want, exact := strings.CutPrefix(tt.err, "=")
				if err == nil || (exact && err.Error() != want) || (!exact && !strings.Contains(err.Error(), want)) {
					t.Fatalf("err = %v\nwant %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if named != tt.named || ep.URI != tt.uri || ep.Identity != tt.identity || ep.Machine != tt.machine ||
				ep.Connection != tt.conn || ep.Source != tt.source || ep.File != tt.file {
				t.Errorf("got named %v, %+v\nwant named %v, uri %q, identity %q, machine %v, connection %q, source %q, file %q",
					named, ep, tt.named, tt.uri, tt.identity, tt.machine, tt.conn, tt.source, tt.file)
			}
			if (tt.warning == "") != (ep.Warning == "") || !strings.Contains(ep.Warning, tt.warning) {
				t.Errorf("warning %q; want one with %q", ep.Warning, tt.warning)
			}
		})
	}
}

func TestPodmanDefaultEndpoint(t *testing.T) {
	good, _, _, _, _ := setUpPodmanFiles(t)
	active := newPodmanHome(t, `{"Connection":{"Connections":{"a":{"URI":"tcp://a:1"}}}}`,
		"[engine]\nactive_service = \"old\"\n"+strings.TrimPrefix(testPodmanUserConf, "[engine]\n"))
	jsonWins := newPodmanHome(t, `{"Connection":{"Default":"a","Connections":{"a":{"URI":"tcp://a:1"}}}}`,
		"[engine]\nactive_service = \"old\"\n")
	gone := newPodmanHome(t, `{"Connection":{"Default":"gone"}}`, "")
	none := newPodmanHome(t, `{"Connection":{"Connections":{"a":{"URI":"tcp://a:1"}}}}`, "")
	garbled := newPodmanHome(t, `{"Connection": [`, "")
	etcActive := filepath.Join(t.TempDir(), "etc-active.conf")
	writeFile(t, etcActive, "[engine]\nactive_service = \"sys\"\n[engine.service_destinations.sys]\nuri = \"tcp://etc:1\"\n")

	for _, tt := range []struct {
		name     string
		env      map[string]string
		ok       bool
		uri      string
		identity string
		machine  bool
		conn     string
		setBy    string
		err      string
	}{
		{name: "Connection.Default of podman-connections.json", env: map[string]string{"HOME": good.dir},
			ok: true, uri: "ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock", identity: "/h/machine/key", machine: true,
			conn: "machine", setBy: "Connection.Default in " + good.json},
		{name: "active_service of containers.conf", env: map[string]string{"HOME": active.dir},
			ok: true, uri: "ssh://old@host.example.com:2222/run/podman/podman.sock", identity: "/h/.ssh/old",
			conn: "old", setBy: "active_service in " + active.conf},
		{name: "Connection.Default wins over active_service", env: map[string]string{"HOME": jsonWins.dir},
			ok: true, uri: "tcp://a:1", conn: "a", setBy: "Connection.Default in " + jsonWins.json},
		{name: "a later active_service wins", env: map[string]string{"HOME": active.dir, "CONTAINERS_CONF_OVERRIDE": etcActive},
			ok: true, uri: "tcp://etc:1", conn: "sys", setBy: "active_service in " + etcActive},
		{name: "none", env: map[string]string{"HOME": none.dir}},
		{name: "the default does not exist", env: map[string]string{"HOME": gone.dir},
			err: fmt.Sprintf(`podman connection "gone": not found in %s nor in [engine.service_destinations] of `, gone.json) +
				"%s (set by Connection.Default in " + gone.json + ")"},
		{name: "garbled podman-connections.json", env: map[string]string{"HOME": garbled.dir},
			err: fmt.Sprintf("podman default connection: parsing %s: unexpected EOF", garbled.json)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ep, ok, err := podmanDefaultEndpoint(mapGetenv(tt.env))
			if tt.err != "" {
				before, after, _ := strings.Cut(tt.err, "%s")
				if err == nil || !strings.HasPrefix(err.Error(), before) || !strings.HasSuffix(err.Error(), after) {
					t.Fatalf("err = %v; want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.ok || ep.URI != tt.uri || ep.Identity != tt.identity || ep.Machine != tt.machine ||
				ep.Connection != tt.conn || ep.SetBy != tt.setBy || (ok && ep.Source != podmanSourceDefault) {
				t.Errorf("got ok %v, %+v\nwant ok %v, uri %q, identity %q, machine %v, connection %q, set by %q",
					ok, ep, tt.ok, tt.uri, tt.identity, tt.machine, tt.conn, tt.setBy)
			}
		})
	}
}

// TestPodmanConnectionsNoFiles looks a connection up where no file
// exists: the error names every file looked for.
func TestPodmanConnectionsNoFiles(t *testing.T) {
	usr, etc := withPodmanSystemConfs(t, t.TempDir())
	home := t.TempDir()
	json := filepath.Join(home, ".config", "containers", "podman-connections.json")
	_, _, err := resolvePodmanEndpoint(&Options{Connection: "gone"}, mapGetenv(map[string]string{"HOME": home}))
	want := fmt.Sprintf(`podman connection "gone": not found in %s (which does not exist) nor in containers.conf (none of %s, %s, %s exists) (set by Options.Connection)`,
		json, usr, etc, filepath.Join(home, ".config", "containers", "containers.conf"))
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	if ep, ok, err := podmanDefaultEndpoint(mapGetenv(map[string]string{"HOME": home})); ok || err != nil || ep != (podmanEndpoint{}) {
		t.Errorf("default connection: %+v, %v, %v; want none", ep, ok, err)
	}
}

// TestFindPodman checks the order New tries: a named service
// alone; else the local sockets, then the default connection (with its
// identity), read only when no socket answers; and what it logs.
func TestFindPodman(t *testing.T) {
	good, _, _, _, _ := setUpPodmanFiles(t)
	garbled := newPodmanHome(t, `{"Connection": {`, "")
	none := newPodmanHome(t, "", "")
	failing := newPodmanHome(t, `{"Connection":{"Default":"bad","Connections":{"bad":{"URI":"ssh://u@h/s","Identity":"/bad/key"}}}}`, "")
	const machineURI = "ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock"
	sockets := []string{"unix:///run/podman/podman.sock", "unix:///run/user/0/podman/podman.sock"}

	for _, tt := range []struct {
		name     string
		env      map[string]string
		answer   []string // the URIs that connect
		attempts []string // the URIs tried, in order
		found    string   // the URI connected to, "" none
		source   string
		tried    []string // parts of each reason in tried
		mayStart bool
		err      string
		logs     []string
	}{
		{name: "a local socket before the default connection; the files are not read",
			env: map[string]string{"HOME": garbled.dir}, answer: sockets[1:],
			attempts: sockets, found: sockets[1], source: podmanSourceSocket,
			logs: []string{`msg="podman service address" uri=unix:///run/user/0/podman/podman.sock source="local socket"`}},
		{name: "the default connection when no socket answers, with its identity",
			env: map[string]string{"HOME": good.dir}, answer: []string{machineURI},
			attempts: append(slices.Clone(sockets), machineURI), found: machineURI, source: podmanSourceDefault,
			logs: []string{`msg="podman service address" uri=` + machineURI + ` connection=machine identity=/h/machine/key source="default connection" set_by="Connection.Default in ` +
				good.json + `" file=` + good.json + ` why="no local socket answers"`}},
		{name: "nothing answers",
			env: map[string]string{"HOME": failing.dir}, attempts: append(slices.Clone(sockets), "ssh://u@h/s"),
			tried:    []string{sockets[0] + ": refused", sockets[1] + ": refused", `ssh://u@h/s (podman connection "bad"): refused`},
			mayStart: true},
		{name: "a garbled connections file after the sockets: a reason, and a warning",
			env: map[string]string{"HOME": garbled.dir}, attempts: sockets,
			tried:    []string{sockets[0], sockets[1], "podman default connection: parsing " + garbled.json + ": unexpected EOF"},
			mayStart: true,
			logs:     []string{`level=WARN msg="podman default connection" error="podman default connection: parsing ` + garbled.json}},
		{name: "no default connection", env: map[string]string{"HOME": none.dir}, attempts: sockets,
			tried: []string{sockets[0], sockets[1]}, mayStart: true},
		{name: "CONTAINER_CONNECTION alone",
			env: map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "remote"}, answer: sockets,
			attempts: []string{"ssh://me@build.example.com/run/podman/podman.sock"},
			tried:    []string{`ssh://me@build.example.com/run/podman/podman.sock (podman connection "remote"): refused`},
			logs: []string{`msg="podman service address" uri=ssh://me@build.example.com/run/podman/podman.sock connection=remote identity=/h/.ssh/id_ed25519 source=CONTAINER_CONNECTION file=` +
				good.json}},
		{name: "CONTAINER_HOST alone",
			env: map[string]string{"HOME": good.dir, "CONTAINER_HOST": "tcp://h:1"}, answer: []string{"tcp://h:1"},
			attempts: []string{"tcp://h:1"}, found: "tcp://h:1", source: podmanSourceHostEnv},
		{name: "CONTAINER_CONNECTION over CONTAINER_HOST, with a warning",
			env:    map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "local", "CONTAINER_HOST": "tcp://h:1"},
			answer: []string{"unix:///run/user/1000/podman/podman.sock"}, attempts: []string{"unix:///run/user/1000/podman/podman.sock"},
			found: "unix:///run/user/1000/podman/podman.sock", source: podmanSourceConnectionEnv,
			logs: []string{`level=WARN msg="podman service address" warning="CONTAINER_CONNECTION=\"local\" overrides CONTAINER_HOST=tcp://h:1, as it does for podman"`}},
		{name: "an unknown CONTAINER_CONNECTION: nothing tried",
			env: map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "gone"},
			err: `podman connection "gone": not found in ` + good.json},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			var attempts []string
			var identities []string
			try := func(ep podmanEndpoint) error {
				attempts = append(attempts, ep.URI)
				identities = append(identities, ep.Identity)
				if slices.Contains(tt.answer, ep.URI) {
					return nil
				}
				return errors.New("refused")
			}
			found, tried, mayStart, err := findPodman(nil, mapGetenv(tt.env), sockets, log, try)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || len(attempts) > 0 {
					t.Fatalf("err = %v, attempts %v; want %q and none", err, attempts, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(attempts, tt.attempts) {
				t.Errorf("attempts %v; want %v", attempts, tt.attempts)
			}
			switch {
			case tt.found == "" && found != nil:
				t.Errorf("found %+v; want none", *found)
			case tt.found != "" && (found == nil || found.URI != tt.found || found.Source != tt.source):
				t.Errorf("found %+v; want %s from %s", found, tt.found, tt.source)
			}
			if found != nil && found.URI == machineURI && (found.Identity != "/h/machine/key" || !found.Machine ||
				identities[len(identities)-1] != "/h/machine/key") {
				t.Errorf("the default connection was tried as %+v (identities %v); want its identity and machine mode", *found, identities)
			}
			if len(tried) != len(tt.tried) {
				t.Errorf("tried %q; want %d reasons", tried, len(tt.tried))
			}
			for i := range min(len(tried), len(tt.tried)) {
				if !strings.Contains(tried[i], tt.tried[i]) {
					t.Errorf("tried[%d] = %q; want it to contain %q", i, tried[i], tt.tried[i])
				}
			}
			if mayStart != tt.mayStart {
				t.Errorf("mayStart %v; want %v", mayStart, tt.mayStart)
			}
			for _, want := range tt.logs {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("logs lack %q:\n%s", want, logs.String())
				}
			}
		})
	}
}

func TestPodmanEndpoint(t *testing.T) {
	good, _, _, _, _ := setUpPodmanFiles(t)
	none := newPodmanHome(t, "", "")
	for _, tt := range []struct {
		name string
		uri  string
		env  map[string]string
		want Target
		err  string
	}{
		{name: "uri", uri: "tcp://a:1", env: map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "remote"},
			want: Target{Address: "tcp://a:1"}},
		{name: "CONTAINER_CONNECTION", env: map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "remote"},
			want: Target{Address: "ssh://me@build.example.com/run/podman/podman.sock", Connection: "remote"}},
		{name: "CONTAINER_HOST", env: map[string]string{"HOME": good.dir, "CONTAINER_HOST": "tcp://h:1"},
			want: Target{Address: "tcp://h:1"}},
		{name: "the default connection", env: map[string]string{"HOME": good.dir},
			want: Target{DefaultAddress: "ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock", DefaultConnection: "machine"}},
		{name: "nothing", env: map[string]string{"HOME": none.dir}},
		{name: "unknown", env: map[string]string{"HOME": good.dir, "CONTAINER_CONNECTION": "gone"},
			err: `podman connection "gone": not found in ` + good.json},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Endpoint(tt.uri, "", mapGetenv(tt.env))
			if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err = %v; want %q", err, tt.err)
			}
			if got != tt.want {
				t.Errorf("got %+v; want %+v", got, tt.want)
			}
		})
	}
}

// fakePodmanService answers the requests New and Describe make as
// a Podman service with no container does.
func fakePodmanService() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Libpod-API-Version", "5.6.2")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/_ping"):
			fmt.Fprint(w, "OK")
		case strings.HasSuffix(r.URL.Path, "/info"):
			fmt.Fprint(w, `{"host":{"ociRuntime":{"name":"crun"}},"version":{"APIVersion":"5.6.2","Version":"5.6.2"}}`)
		default:
			fmt.Fprint(w, "[]")
		}
	})
}

// TestNewPodmanReachesConnection connects New, through
// CONTAINER_CONNECTION, to a fake service on a unix socket, which is all
// a connection names, and checks that a connection's identity reaches
// the ssh client. Built without the Podman backend, it checks that
// New says so.
func TestNewPodmanReachesConnection(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "p.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(fakePodmanService())
	srv.Listener = l
	srv.Start()
	defer srv.Close()

	home := newPodmanHome(t, fmt.Sprintf(`{"Connection":{"Connections":{
		"fake":{"URI":"unix://%s"},
		"ssh":{"URI":"ssh://u@127.0.0.1:1/run/podman/podman.sock","Identity":"/nonexistent/id_test"}}}}`, sock), "")
	empty := filepath.Join(t.TempDir(), "containers.conf")
	writeFile(t, empty, "")
	t.Setenv("HOME", home.dir)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("PODMAN_CONNECTIONS_CONF", "")
	t.Setenv("CONTAINERS_CONF", empty) // not the host's
	t.Setenv("CONTAINERS_CONF_OVERRIDE", "")
	t.Setenv("CONTAINER_HOST", "")
	t.Setenv("CONTAINER_SSHKEY", "")
	t.Setenv("CONTAINER_CONNECTION", "fake")
	var logs bytes.Buffer
	p, err := New(context.Background(), &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if errors.Is(err, engine.ErrBackendNotCompiled) {
		t.Skip("built without the Podman backend")
	}
	if err != nil {
		t.Fatalf("New: %v\n%s", err, logs.String())
	}
	defer p.Close()
	d, ok := any(p).(engine.Describer)
	if !ok {
		t.Fatal("a Podman is no Describer")
	}
	info, err := d.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Address != "unix://"+sock || info.Context != "fake" || info.Version != "5.6.2" || info.DefaultOCIRuntime != "crun" {
		t.Errorf("info %+v", info)
	}
	for _, want := range []string{
		`msg="podman service address" uri=unix://` + sock + ` connection=fake source=CONTAINER_CONNECTION file=` + home.json,
		`msg="connected to podman" uri=unix://` + sock + ` connection=fake api=5.6.2`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}

	t.Setenv("CONTAINER_CONNECTION", "gone")
	if _, err := New(context.Background(), nil); err == nil ||
		err.Error() != fmt.Sprintf(`podman connection "gone": not found in %s nor in [engine.service_destinations] of %s (set by CONTAINER_CONNECTION)`,
			home.json, empty) {
		t.Errorf("New with a missing connection: %v", err)
	}

	// The identity of the connection is the ssh client's: reading it
	// fails before anything is dialled.
	if _, err := New(context.Background(), &Options{Connection: "ssh"}); err == nil ||
		!strings.Contains(err.Error(), `ssh://u@127.0.0.1:1/run/podman/podman.sock (podman connection "ssh"): `) ||
		!strings.Contains(err.Error(), `failed to read identity "/nonexistent/id_test"`) {
		t.Errorf("New with an ssh connection: %v", err)
	}
}

// writeFile writes data to path, making its directories, or fails t.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// mapGetenv is a getenv over env.
func mapGetenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}
