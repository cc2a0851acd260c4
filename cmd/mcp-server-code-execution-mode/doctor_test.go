package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// goodProbe is what probeProgram prints in a container hardened as the
// default settings ask (cgroup v2).
var goodProbe = map[string]any{
	"uid": 65534, "gid": 65534, "euid": 65534, "egid": 65534,
	"write_root": "OSError: [Errno 30] Read-only file system: '/.mcp-doctor-probe'",
	"root":       map[string]any{"type": "overlay", "options": []string{"ro", "relatime"}},
	"tmp":        map[string]any{"type": "tmpfs", "options": []string{"rw", "nosuid", "nodev", "noexec", "relatime"}},
	"interfaces": []string{"lo"},
	"connect":    "OSError: [Errno 101] Network is unreachable",
	"cap_eff":    "0000000000000000", "no_new_privs": "1",
	"mem_path": "/sys/fs/cgroup/memory.max", "mem": "536870912",
	"pids_path": "/sys/fs/cgroup/pids.max", "pids": "128",
}

// A fakeEngine is an engine.Describer whose sandboxes print a canned probe
// report.
type fakeEngine struct {
	info      engine.Info
	infoErr   error
	hasImage  bool
	pullErr   error
	startErr  error
	probe     map[string]any // what the probe prints
	exitCode  int
	runtime   string // the sandboxes' OCI runtime
	started   atomic.Int32
	closed    atomic.Int32
	lastSpec  engine.Spec
	engClosed bool
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{
		info: engine.Info{Backend: "docker", Version: "20.10.24", APIVersion: "1.41",
			Address: "unix:///var/run/docker.sock", DefaultOCIRuntime: "runc"},
		hasImage: true, probe: goodProbe, runtime: "runc",
	}
}

func (f *fakeEngine) Describe(context.Context) (engine.Info, error) { return f.info, f.infoErr }
func (f *fakeEngine) HasImage(context.Context, string) (bool, error) {
	return f.hasImage, nil
}
func (f *fakeEngine) PullImage(context.Context, string) error { return f.pullErr }

func (f *fakeEngine) Start(_ context.Context, spec engine.Spec) (engine.Sandbox, error) {
	f.lastSpec = spec
	if f.startErr != nil {
		return nil, f.startErr
	}
	f.started.Add(1)
	out, _ := json.Marshal(f.probe)
	return &fakeSandbox{f: f, stdout: bytes.NewReader(append(out, '\n'))}, nil
}

// A fakeSandbox prints its engine's probe report and exits.
type fakeSandbox struct {
	f      *fakeEngine
	stdout io.Reader
	stdin  bytes.Buffer
}

func (s *fakeSandbox) ID() string            { return "fake" }
func (s *fakeSandbox) Stdin() io.WriteCloser { return nopWriteCloser{&s.stdin} }
func (s *fakeSandbox) Stdout() io.Reader     { return s.stdout }
func (s *fakeSandbox) Stderr() io.Reader     { return strings.NewReader("") }
func (s *fakeSandbox) Close() error          { s.f.closed.Add(1); return nil }
func (s *fakeSandbox) Wait(context.Context) (engine.ExitStatus, error) {
	return engine.ExitStatus{Code: s.f.exitCode}, nil
}
func (s *fakeSandbox) OCIRuntime(context.Context) (string, error) { return s.f.runtime, nil }

// doctorWith runs doctor with args on f, in a home and working directory
// of their own holding files (relative to the home), and returns its
// output and exit code.
func doctorWith(t *testing.T, f *fakeEngine, env map[string]string, files map[string]string, args ...string) (string, string, int) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(t.TempDir())
	for name, content := range files {
		path := filepath.Join(home, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env = withPipWheel(t, env)
	var out, errb bytes.Buffer
	code := runDoctor(context.Background(), args, &out, &errb, func(k string) string { return env[k] },
		func(*config.Config, *slog.Logger) (engine.Engine, func()) {
			return f, func() { f.engClosed = true }
		})
	return out.String(), errb.String(), code
}

// withPipWheel returns env with MCP_BRIDGE_PIP_WHEEL naming a file of the
// test's (unless env names one), so that the packages check reads a
// wheel and fetches none.
func withPipWheel(t *testing.T, env map[string]string) map[string]string {
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	if _, ok := out["MCP_BRIDGE_PIP_WHEEL"]; !ok {
		w := filepath.Join(t.TempDir(), "pip-23.0.1-py3-none-any.whl")
		os.WriteFile(w, []byte("PK"), 0o644)
		out["MCP_BRIDGE_PIP_WHEEL"] = w
	}
	return out
}

// decodeReport decodes doctor's JSON, the whole of its stdout.
func decodeReport(t *testing.T, out string) []map[string]any {
	t.Helper()
	var rs []map[string]any
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("stdout is not one JSON array: %v\n%s", err, out)
	}
	return rs
}

// statuses returns "check=status" for each result.
func statuses(rs []map[string]any) []string {
	var s []string
	for _, r := range rs {
		s = append(s, r["check"].(string)+"="+r["status"].(string))
	}
	return s
}

func TestDoctorAllGoodJSON(t *testing.T) {
	f := newFakeEngine()
	out, errs, code := doctorWith(t, f, nil, nil, "--json")
	rs := decodeReport(t, out)
	want := []string{"settings=ok", "engine=ok", "image=ok", "hardening=ok", "runtime=ok", "config=ok", "server=ok", "network=ok", "packages=ok"}
	if code != 0 || !slices.Equal(statuses(rs), want) {
		t.Fatalf("code %d, %v; want 0, %v\nstdout %s\nstderr %s", code, statuses(rs), want, out, errs)
	}
	for _, r := range rs {
		for _, k := range []string{"check", "status", "detail", "duration_ms"} {
			if _, ok := r[k]; !ok {
				t.Errorf("%v has no %q", r, k)
			}
		}
		if _, ok := r["hint"]; ok {
			t.Errorf("a passed check with a hint: %v", r)
		}
	}
	eng := rs[1]
	if eng["engine"] != "docker" || eng["version"] != "20.10.24" || eng["api_version"] != "1.41" ||
		!strings.Contains(eng["detail"].(string), "docker 20.10.24 (API 1.41) at unix:///var/run/docker.sock") {
		t.Errorf("engine: %v", eng)
	}
	hard := rs[3]
	if _, ok := hard["start_ms"]; !ok || len(hard["properties"].([]any)) != 8 ||
		!strings.Contains(hard["detail"].(string), "uid:gid 65534:65534") {
		t.Errorf("hardening: %v", hard)
	}
	if rs[4]["runtime"] != "runc" || rs[4]["want_runtime"] != "runc" {
		t.Errorf("runtime: %v", rs[4])
	}
	// The probe ran the bridge's own spec and its container was removed.
	if f.started.Load() != 1 || f.closed.Load() != 1 || !f.engClosed {
		t.Errorf("started %d, closed %d sandboxes; engine closed %v", f.started.Load(), f.closed.Load(), f.engClosed)
	}
	if f.lastSpec.Session != "doctor" || !slices.Equal(f.lastSpec.Cmd, probeCommand) {
		t.Errorf("probe spec %+v", f.lastSpec)
	}
}

func TestDoctorHumanFormat(t *testing.T) {
	files := map[string]string{"MCPs/broken.json": "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n  }}}\n"}
	out, _, code := doctorWith(t, newFakeEngine(), nil, files)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if code != 1 || len(lines) != 12 {
		t.Fatalf("code %d, %d lines:\n%s", code, len(lines), out)
	}
	// The settings set (the test's pip wheel) and the count of the
	// others follow the settings line.
	if !strings.HasPrefix(lines[1], "      MCP_BRIDGE_PIP_WHEEL  /") || !strings.HasSuffix(lines[1], ".whl  (environment)") ||
		!strings.HasPrefix(lines[2], "      ") || !strings.HasSuffix(lines[2], " others at their defaults (docs/SETTINGS.md lists them)") {
		t.Errorf("settings lines %q", lines[1:3])
	}
	lines = slices.Delete(lines, 1, 3)
	for i, prefix := range []string{"ok    settings  ", "ok    engine    docker 20.10.24 (API 1.41) at unix:///var/run/docker.sock",
		"ok    image     ", "ok    hardening uid:gid 65534:65534, / read-only", "ok    runtime   ", "FAIL  config    ",
		"      hint: fix the file or remove it; other files are still read", "ok    server    no MCP server configured",
		"ok    network   there is no network section in the policy",
		"ok    packages  no package set (MCP_BRIDGE_PACKAGES unset); runtime.install installs from https://pypi.org/simple/ with pip-23.0.1-py3-none-any.whl"} {
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("line %d: %q; want it to start with %q", i, lines[i], prefix)
		}
	}
	if !strings.Contains(lines[5], filepath.Join("MCPs", "broken.json")+":4:5: '}' after the end of the document") {
		t.Errorf("config line %q lacks the file's line and column", lines[5])
	}
	if !strings.HasSuffix(lines[1], " ms") {
		t.Errorf("engine line %q has no duration", lines[1])
	}
}

func TestDoctorFailures(t *testing.T) {
	rootProbe := map[string]any{}
	for k, v := range goodProbe {
		rootProbe[k] = v
	}
	rootProbe["uid"], rootProbe["euid"] = 0, 0
	rootProbe["mem"] = "max"
	for _, tt := range []struct {
		name   string
		setup  func(f *fakeEngine)
		env    map[string]string
		want   []string
		detail map[string]string // check → part of its detail
		hint   map[string]string // check → part of its hint
	}{
		{name: "hardening", setup: func(f *fakeEngine) { f.probe = rootProbe },
			want:   []string{"settings=ok", "engine=ok", "image=ok", "hardening=fail", "runtime=ok", "config=ok", "server=ok", "network=ok", "packages=ok"},
			detail: map[string]string{"hardening": "user: 0:65534, want 65534:65534; memory: max (/sys/fs/cgroup/memory.max), want 512 MiB"}},
		{name: "image", setup: func(f *fakeEngine) { f.hasImage, f.pullErr = false, errors.New("no registry") },
			want:   []string{"settings=ok", "engine=ok", "image=fail", "hardening=skip", "runtime=skip", "config=ok", "server=ok", "network=ok", "packages=ok"},
			detail: map[string]string{"image": "is not present, and pulling it failed: no registry", "hardening": "the sandbox image is not available"},
			hint:   map[string]string{"image": "scripts/provision"}},
		{name: "start", setup: func(f *fakeEngine) { f.startErr = errors.New("no such runtime") },
			want:   []string{"settings=ok", "engine=ok", "image=ok", "hardening=fail", "runtime=skip", "config=ok", "server=ok", "network=ok", "packages=ok"},
			detail: map[string]string{"hardening": "starting the probe container: no such runtime"}},
		{name: "probe exit", setup: func(f *fakeEngine) { f.exitCode = 127 },
			want: []string{"settings=ok", "engine=ok", "image=ok", "hardening=fail", "runtime=ok", "config=ok", "server=ok", "network=ok", "packages=ok"},
			hint: map[string]string{"hardening": "python3"}},
		{name: "runtime", setup: func(f *fakeEngine) {}, env: map[string]string{"MCP_BRIDGE_OCI_RUNTIME": "runsc"},
			want:   []string{"settings=ok", "engine=ok", "image=ok", "hardening=fail", "runtime=fail", "snapshots=skip", "config=ok", "server=ok", "network=ok", "packages=ok"},
			detail: map[string]string{"runtime": "ran under runc, but MCP_BRIDGE_OCI_RUNTIME asks for runsc", "snapshots": "off (MCP_BRIDGE_SNAPSHOTS); this engine could not"}},
		{name: "snapshots", setup: func(f *fakeEngine) {}, env: map[string]string{"MCP_BRIDGE_OCI_RUNTIME": "runsc", "MCP_BRIDGE_SNAPSHOTS": "1"},
			want:   []string{"settings=ok", "engine=ok", "image=ok", "hardening=fail", "runtime=fail", "snapshots=fail", "config=ok", "server=ok", "network=ok", "packages=ok"},
			detail: map[string]string{"snapshots": "cannot checkpoint sandboxes"},
			hint:   map[string]string{"snapshots": "unset MCP_BRIDGE_SNAPSHOTS"}},
		{name: "engine", setup: func(f *fakeEngine) { f.infoErr = errors.New("connection refused") },
			want:   []string{"settings=ok", "engine=fail", "image=skip", "hardening=skip", "runtime=skip", "config=ok", "server=ok", "network=ok", "packages=ok"},
			detail: map[string]string{"image": "the container engine does not answer"},
			hint:   map[string]string{"engine": "DOCKER_HOST"}},
		{name: "settings", setup: func(f *fakeEngine) {}, env: map[string]string{"MCP_BRIDGE_MEMORY": "lots"},
			want:   []string{"settings=fail", "engine=skip", "image=skip", "hardening=skip", "runtime=skip", "config=skip", "server=skip", "network=skip", "packages=skip"},
			detail: map[string]string{"settings": "MCP_BRIDGE_MEMORY"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			tt.setup(f)
			out, errs, code := doctorWith(t, f, tt.env, nil, "-json")
			rs := decodeReport(t, out)
			if code != 1 || !slices.Equal(statuses(rs), tt.want) {
				t.Fatalf("code %d, %v; want 1, %v\nstderr %s", code, statuses(rs), tt.want, errs)
			}
			for _, r := range rs {
				c := r["check"].(string)
				if d, ok := tt.detail[c]; ok && !strings.Contains(r["detail"].(string), d) {
					t.Errorf("%s detail %q lacks %q", c, r["detail"], d)
				}
				if h, ok := tt.hint[c]; ok && !strings.Contains(r["hint"].(string), h) {
					t.Errorf("%s hint %q lacks %q", c, r["hint"], h)
				}
				if r["status"] == statusFail && r["hint"] == nil && c != "runtime" && c != "hardening" {
					t.Errorf("%s failed without a hint: %v", c, r)
				}
			}
			if f.started.Load() != f.closed.Load() {
				t.Errorf("%d probe containers started, %d closed", f.started.Load(), f.closed.Load())
			}
		})
	}
}

func TestDoctorUsage(t *testing.T) {
	for _, args := range [][]string{{"extra"}, {"-nope"}, {"-timeout", "0s"}, {"-timeout", "soon"}} {
		out, errs, code := doctorWith(t, newFakeEngine(), nil, nil, args...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("doctor %q: code %d, stdout %q, stderr %q; want 2 and a message", args, code, out, errs)
		}
	}
}

// TestDoctorDeadEngine runs doctor on the real engine constructor against
// a Docker address where nothing listens: the engine check fails at once,
// naming the address, and the checks needing the engine are skipped.
func TestDoctorDeadEngine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	t.Setenv("DOCKER_HOST", "tcp://"+addr)
	t.Setenv("HOME", t.TempDir())
	t.Chdir(t.TempDir())
	env := withPipWheel(t, map[string]string{"MCP_BRIDGE_RUNTIME": "docker"})
	began := time.Now()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"doctor", "--json"}, io.NopCloser(strings.NewReader("")), nopWriteCloser{&out}, &errb,
		func(k string) string { return env[k] })
	took := time.Since(began)
	rs := decodeReport(t, out.String())
	want := []string{"settings=ok", "engine=fail", "image=skip", "hardening=skip", "runtime=skip", "config=ok", "server=ok", "network=ok", "packages=ok"}
	if code != 1 || !slices.Equal(statuses(rs), want) || took > 12*time.Second {
		t.Fatalf("code %d, %v in %v; want 1, %v within 12 s\nstderr %s", code, statuses(rs), took, want, errb.String())
	}
	if d := rs[1]["detail"].(string); !strings.Contains(d, addr) || !strings.Contains(d, "no container engine is reachable") {
		t.Errorf("engine detail %q does not name %s", d, addr)
	}
}

// TestDoctorDockerContext checks that the engine check names the Docker
// context the daemon was found through, when it answers and when it
// does not.
func TestDoctorDockerContext(t *testing.T) {
	f := newFakeEngine()
	f.info.Address, f.info.Context = "unix:///home/u/.colima/default/docker.sock", "colima"
	out, errs, code := doctorWith(t, f, nil, nil, "-json")
	rs := decodeReport(t, out)
	if code != 0 || rs[1]["context"] != "colima" ||
		!strings.Contains(rs[1]["detail"].(string), `at unix:///home/u/.colima/default/docker.sock (docker context "colima")`) {
		t.Errorf("code %d, engine %v\nstderr %s", code, rs[1], errs)
	}

	dir := t.TempDir()
	sum := sha256.Sum256([]byte("colima"))
	meta := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json")
	if err := os.MkdirAll(filepath.Dir(meta), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(meta, []byte(`{"Name":"colima","Endpoints":{"docker":{"Host":"unix:///c.sock"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"currentContext":"colima"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		env  map[string]string
		addr string
		name string // the Docker context or Podman connection an endpoint names
		want string
	}{
		{env: map[string]string{}, want: `docker at unix:///c.sock (docker context "colima")`},
		{env: map[string]string{"DOCKER_HOST": "tcp://h:1"}, want: "docker at tcp://h:1"},
		{env: map[string]string{"DOCKER_HOST": "tcp://h:1"}, addr: "tcp://a:2", want: "docker at tcp://a:2"},
		{env: map[string]string{"DOCKER_CONTEXT": "default"}, want: `docker at unix:///var/run/docker.sock (docker context "default")`},
		{env: map[string]string{"DOCKER_CONTEXT": "gone"},
			want: `docker (docker context "gone": not found in ` + filepath.Join(dir, "contexts") + " (set by DOCKER_CONTEXT))"},
		// docker@NAME in MCP_BRIDGE_ENGINES: the context overrides the
		// environment's.
		{env: map[string]string{"DOCKER_HOST": "tcp://h:1", "DOCKER_CONTEXT": "gone"}, name: "colima",
			want: `docker at unix:///c.sock (docker context "colima")`},
		{env: map[string]string{"DOCKER_HOST": "tcp://h:1"}, name: "default", want: `docker at tcp://h:1 (docker context "default")`},
		{env: map[string]string{"DOCKER_CONTEXT": "colima"}, name: "default",
			want: `docker at unix:///var/run/docker.sock (docker context "default")`},
		{env: map[string]string{}, name: "gone", want: `docker (docker context "gone")`},
	} {
		tt.env["DOCKER_CONFIG"] = dir
		d := &doctor{getenv: func(k string) string { return tt.env[k] }}
		cfg := &config.Config{}
		cfg.Engine.Backend, cfg.Engine.Address, cfg.Engine.Context = engine.BackendDocker, tt.addr, tt.name
		if got := d.engineWhere(cfg); got != tt.want {
			t.Errorf("engineWhere with %v, address %q, context %q: %q; want %q", tt.env, tt.addr, tt.name, got, tt.want)
		}
	}
}

// TestDoctorPodmanConnection checks that the engine check names the
// Podman connection the service was found through, when it answers and
// when it does not.
func TestDoctorPodmanConnection(t *testing.T) {
	f := newFakeEngine()
	f.info.Backend, f.info.Address, f.info.Context = engine.BackendPodman, "ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock", "podman-machine-default"
	out, errs, code := doctorWith(t, f, nil, nil, "-json")
	rs := decodeReport(t, out)
	if code != 0 || rs[1]["context"] != "podman-machine-default" ||
		!strings.Contains(rs[1]["detail"].(string), `at ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock (podman connection "podman-machine-default")`) {
		t.Errorf("code %d, engine %v\nstderr %s", code, rs[1], errs)
	}

	dir := t.TempDir()
	conns := filepath.Join(dir, "podman-connections.json")
	noDefault := filepath.Join(dir, "no-default.json")
	conf := filepath.Join(dir, "containers.conf")
	for file, content := range map[string]string{
		conns: `{"Connection":{"Default":"podman-machine-default","Connections":{
			"podman-machine-default":{"URI":"ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock","Identity":"/k","IsMachine":true},
			"remote":{"URI":"ssh://me@build.example.com/run/podman/podman.sock"}}}}`,
		noDefault: `{"Connection":{"Connections":{"remote":{"URI":"ssh://me@build.example.com/run/podman/podman.sock"}}}}`,
		conf:      "",
	} {
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		env  map[string]string
		addr string
		name string // the Docker context or Podman connection an endpoint names
		want string
	}{
		{env: map[string]string{},
			want: `podman at the usual sockets, then at ssh://core@127.0.0.1:50123/run/user/501/podman/podman.sock (default podman connection "podman-machine-default")`},
		{env: map[string]string{"PODMAN_CONNECTIONS_CONF": noDefault}, want: "podman at the usual sockets"},
		{env: map[string]string{"CONTAINER_CONNECTION": "remote"},
			want: `podman at ssh://me@build.example.com/run/podman/podman.sock (podman connection "remote")`},
		{env: map[string]string{"CONTAINER_HOST": "tcp://h:1"}, want: "podman at tcp://h:1"},
		{env: map[string]string{"CONTAINER_CONNECTION": "remote"}, addr: "tcp://a:2", want: "podman at tcp://a:2"},
		{env: map[string]string{"CONTAINER_CONNECTION": "gone"},
			want: `podman (podman connection "gone": not found in ` + conns + ` nor in [engine.service_destinations] of ` + conf +
				" (set by CONTAINER_CONNECTION))"},
		// podman@NAME in MCP_BRIDGE_ENGINES: the connection overrides the
		// environment's.
		{env: map[string]string{"CONTAINER_HOST": "tcp://h:1", "CONTAINER_CONNECTION": "gone"}, name: "remote",
			want: `podman at ssh://me@build.example.com/run/podman/podman.sock (podman connection "remote")`},
		{env: map[string]string{}, name: "gone", want: `podman (podman connection "gone")`},
	} {
		tt.env["CONTAINERS_CONF"] = conf // not the host's
		if tt.env["PODMAN_CONNECTIONS_CONF"] == "" {
			tt.env["PODMAN_CONNECTIONS_CONF"] = conns
		}
		d := &doctor{getenv: func(k string) string { return tt.env[k] }}
		cfg := &config.Config{}
		cfg.Engine.Backend, cfg.Engine.Address, cfg.Engine.Context = engine.BackendPodman, tt.addr, tt.name
		if got := d.engineWhere(cfg); got != tt.want {
			t.Errorf("engineWhere with %v, address %q, connection %q: %q; want %q", tt.env, tt.addr, tt.name, got, tt.want)
		}
	}
}

// TestDoctorEnginesWithContexts checks that each engine of
// MCP_BRIDGE_ENGINES that names a Docker context or Podman connection is
// checked through it.
func TestDoctorEnginesWithContexts(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Chdir(t.TempDir())
	env := map[string]string{config.EnvEngines: "docker@colima, podman@machine-default, docker=tcp://h:1"}
	f := newFakeEngine()
	var got []string
	var out, errb bytes.Buffer
	code := runDoctor(context.Background(), []string{"-json"}, &out, &errb, func(k string) string { return env[k] },
		func(cfg *config.Config, _ *slog.Logger) (engine.Engine, func()) {
			got = append(got, fmt.Sprintf("%s %q %q", cfg.Engine.Backend, cfg.Engine.Context, cfg.Engine.Address))
			return f, func() {}
		})
	want := []string{`docker "colima" ""`, `podman "machine-default" ""`, `docker "" "tcp://h:1"`}
	if !slices.Equal(got, want) {
		t.Errorf("engines checked %q; want %q (exit %d)\nstderr %s", got, want, code, errb.String())
	}
	if rs := decodeReport(t, out.String()); !strings.Contains(rs[0]["detail"].(string), "docker@colima") {
		t.Errorf("settings %v do not name docker@colima", rs[0])
	}
}

// TestDoctorPackages: a set on an engine that keeps no named volumes
// fails the check, saying so. (A missing pip wheel is packages' own test.)
func TestDoctorPackages(t *testing.T) {
	out, _, _ := doctorWith(t, newFakeEngine(), map[string]string{"MCP_BRIDGE_PACKAGES": "numpy"}, nil, "--json")
	rs := decodeReport(t, out)
	last := rs[len(rs)-1]
	if last["check"] != "packages" || last["status"] != "fail" || !strings.Contains(last["detail"].(string), "keeps no named volumes") {
		t.Fatalf("the packages check: %v; want fail saying the engine keeps no named volumes", last)
	}
}
