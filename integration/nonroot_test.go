//go:build integration

package integration

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestNonRootFirstHour: a new unprivileged user in the docker group, with
// nothing but its home, does what the guide's first hour does, with the
// guide's paths: `setup claude-code`, a first call and a proxied server
// through Claude Code's own configuration (setupClaudeCodeFlow); then a
// call that imports a package of a set (pip fetched into ~/MCPs/pip) and
// reaches a host through the egress gateway with a token the policy in
// ~/MCPs/policy.json injects, its audit in ~/MCPs/audit.jsonl; and `exec
// -out`, whose files the user owns. The bridge finds Docker by itself:
// no Podman service answers for this user, and it starts none while
// Docker answers.
func TestNonRootFirstHour(t *testing.T) {
	t.Parallel()
	onEngine(t, "docker", func(t *testing.T, e testEngine) {
		acct := newAccount(t, "docker")
		bin := acct.install(t, binary(t))
		t.Run("setup", func(t *testing.T) { setupClaudeCodeFlow(t, bin, acct) })

		t.Run("egress-and-packages", func(t *testing.T) {
			takePackageVolumes(t, "docker")
			ix := newTestIndex(t, map[string][]byte{"mcpegresstest-1.0-py3-none-any.whl": testWheel(t)})
			var mu sync.Mutex
			var seen []string
			host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Header.Get("Authorization"))
				mu.Unlock()
				fmt.Fprint(w, "hello from the host")
			}))
			t.Cleanup(host.Close)
			hp := strings.TrimPrefix(host.URL, "http://")
			acct.writeFile(t, "MCPs/policy.json", fmt.Appendf(nil, `{"network": {"allow": [%q], "inject": [{"host": %q, "header": "Authorization", "value": "Bearer ${IT_TOKEN}"}]}}`, hp, hp))
			audit := acct.path("MCPs/audit.jsonl")
			var stderr bytes.Buffer
			cs := acct.connectBridge(t, bin, &stderr, "IT_TOKEN=it-nonroot-token", "MCP_BRIDGE_AUDIT_LOG="+audit,
				"MCP_BRIDGE_PACKAGES=mcpegresstest", "MCP_BRIDGE_PIP_INDEX_URL="+ix.URL+"/simple/", "MCP_BRIDGE_LOG_LEVEL=INFO")
			code := fmt.Sprintf("import mcpegresstest, os, urllib.request\nprint(mcpegresstest.VALUE, os.getuid())\nprint(urllib.request.urlopen(%q, timeout=20).read().decode())", host.URL+"/")
			text, isErr := runPython(t, cs, map[string]any{"code": code, "timeout": 120})
			cs.Close()
			if isErr || text != "42 65534\nhello from the host" {
				t.Fatalf("as %s: %q\nthe bridge's log:\n%s", acct.name, text, stderr.String())
			}
			if !strings.Contains(stderr.String(), `msg="container engine selected" engine=docker`) {
				t.Errorf("the bridge did not say it chose Docker:\n%s", stderr.String())
			}
			mu.Lock()
			if !slices.Equal(seen, []string{"Bearer it-nonroot-token"}) {
				t.Errorf("the host saw %q", seen)
			}
			mu.Unlock()
			for _, p := range []string{audit, acct.path("MCPs/pip/" + pipWheelName)} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Errorf("%s: %v", p, err)
					continue
				}
				if fi.Sys().(*syscall.Stat_t).Uid != acct.uid {
					t.Errorf("%s is not the user's", p)
				}
			}
			data, _ := os.ReadFile(audit)
			if !strings.Contains(string(data), `"event":"egress"`) || strings.Contains(string(data), "it-nonroot-token") {
				t.Errorf("the audit log: %s", data)
			}
		})

		t.Run("exec-out", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out := acct.path("results")
			cmd := acct.command(ctx, nil, bin, "exec", "-out", out, "-c",
				"open('/workspace/out/report.csv', 'w').write('region,total\\nnorth,3\\n')\nprint('done')")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil || stdout.String() != "done\n" {
				t.Fatalf("exec -out: %v, stdout %q, stderr %s", err, stdout.String(), stderr.String())
			}
			p := filepath.Join(out, "report.csv")
			data, err := os.ReadFile(p)
			if err != nil || string(data) != "region,total\nnorth,3\n" {
				t.Fatalf("%s: %q %v", p, data, err)
			}
			if fi, _ := os.Stat(p); fi.Sys().(*syscall.Stat_t).Uid != acct.uid {
				t.Errorf("%s is not the user's", p)
			}
		})
	})
}

// sandboxImage is the image the bridges of the tests run.
func sandboxImage() string {
	return cmp.Or(os.Getenv("MCP_BRIDGE_IMAGE"), "localhost/sandbox-python:3.11")
}

// TestRootlessPodman: a new unprivileged user (not in the docker group)
// loads the sandbox image into its own storage and runs its own `podman
// system service`, which the bridge finds by itself. Where that service
// cannot apply memory, pids and CPU limits (rootless on cgroup v1, as
// here, or cgroup v2 without the controllers delegated) no sandbox
// starts: the call fails saying why and what to set, and doctor's engine
// check fails; with MCP_BRIDGE_ALLOW_WEAK_LIMITS=1 the sandbox runs with
// the rest of its hardening (uid 65534, no network, a read-only root)
// and doctor warns. Where the service applies them, the call runs.
func TestRootlessPodman(t *testing.T) {
	t.Parallel()
	if !slices.Contains(engineNames(), "podman") {
		t.Skip("podman is not under test")
	}
	acct := newAccount(t)
	bin := acct.install(t, binary(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	asUser := func(args ...string) string {
		t.Helper()
		out, err := acct.command(ctx, nil, "podman", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("podman %s as %s: %v\n%s", strings.Join(args, " "), acct.name, err, out)
		}
		return string(out)
	}

	image := sandboxImage()
	archive := acct.path("image.tar")
	if out, err := exec.CommandContext(ctx, "podman", "save", "-o", archive, image).CombinedOutput(); err != nil {
		t.Fatalf("podman save %s: %v\n%s", image, err, out)
	}
	acct.chown(t, archive)
	asUser("load", "-i", archive)
	os.Remove(archive)

	sockDir := filepath.Join(acct.runtime, "podman")
	os.Mkdir(sockDir, 0o700)
	acct.chown(t, sockDir)
	sock := filepath.Join(sockDir, "podman.sock")
	svcCtx, stopSvc := context.WithCancel(context.Background())
	svc := acct.command(svcCtx, nil, "podman", "system", "service", "--time=0", "unix://"+sock)
	var svcLog bytes.Buffer
	svc.Stdout, svc.Stderr = &svcLog, &svcLog
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopSvc(); svc.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the user's podman service did not listen:\n%s", svcLog.String())
		}
	}
	host := strings.Fields(asUser("info", "--format", "{{.Host.CgroupsVersion}} {{range .Host.CgroupControllers}}{{.}},{{end}}"))
	weak := host[0] == "v1" || len(host) < 2 || !strings.Contains(host[1], "memory,") || !strings.Contains(host[1], "pids,") || !strings.Contains(host[1], "cpu,")
	t.Logf("the user's podman service: cgroup %s, controllers %v: limits weak %v", host[0], host[1:], weak)

	probe := `import os, socket
try:
    socket.create_connection(("127.0.0.1", 9), timeout=2)
    net = "connected"
except OSError as e:
    net = type(e).__name__
try:
    open("/x", "w")
    root = "writable"
except OSError:
    root = "read-only"
print(6 * 7, os.getuid(), net, root)`
	want := "42 65534 ConnectionRefusedError read-only"
	doctor := func(env ...string) map[string][]doctorCheck {
		t.Helper()
		var stdout bytes.Buffer
		cmd := acct.command(ctx, env, bin, "doctor", "--json")
		cmd.Stdout = &stdout
		cmd.Run()
		return byCheck(t, stdout.String())
	}

	cs := acct.connectBridge(t, bin, nil)
	text, isErr := runPython(t, cs, map[string]any{"code": probe, "timeout": 120})
	cs.Close()
	checks := doctor()
	switch {
	case weak:
		if !isErr || !strings.Contains(text, "cannot apply the sandbox's memory, pids and CPU limits") || !strings.Contains(text, "MCP_BRIDGE_ALLOW_WEAK_LIMITS=1") ||
			(host[0] == "v1" && !strings.Contains(text, "rootless Podman on cgroup v1")) {
			t.Errorf("a call on rootless Podman that cannot apply the limits: %q (isError %v)", text, isErr)
		}
		if c := checks["engine"]; len(c) != 1 || c[0].Status != "fail" || !strings.Contains(c[0].Detail, "no sandbox starts") {
			t.Errorf("doctor's engine check: %+v", c)
		}
	case isErr || text != want:
		t.Errorf("a call on rootless Podman that applies the limits: %q", text)
	}
	if !weak {
		return
	}

	cs = acct.connectBridge(t, bin, nil, "MCP_BRIDGE_ALLOW_WEAK_LIMITS=1")
	text, isErr = runPython(t, cs, map[string]any{"code": probe, "timeout": 120})
	cs.Close()
	if isErr || text != want {
		t.Errorf("with MCP_BRIDGE_ALLOW_WEAK_LIMITS=1: %q (isError %v)", text, isErr)
	}
	checks = doctor("MCP_BRIDGE_ALLOW_WEAK_LIMITS=1")
	if c := checks["engine"]; len(c) != 1 || c[0].Status != "warn" || !strings.Contains(c[0].Detail, "WITHOUT memory, pids and CPU limits") {
		t.Errorf("doctor's engine check, limits accepted: %+v", c)
	}
	if c := checks["hardening"]; len(c) != 1 || c[0].Status == "fail" {
		t.Errorf("doctor's hardening check, limits accepted: %+v", c)
	}
	if left := strings.TrimSpace(asUser("ps", "-aq")); left != "" {
		t.Errorf("containers left in the user's podman: %s", left)
	}
}
