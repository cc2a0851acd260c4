//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// The tests of this file reach a second Docker daemon, started by the
// tests (tlsDaemon), at a loopback TCP port over mutual TLS, the way a
// remote engine is reached: DOCKER_HOST=tcp://…, DOCKER_TLS_VERIFY=1 and
// DOCKER_CERT_PATH.

// tlsRefused begins the error of a TLS handshake the daemon refused: the
// alert that follows ("bad certificate", "certificate required", "unknown
// certificate authority") depends on the Go release dockerd was built
// with.
const tlsRefused = "remote error: tls: "

// tlsFailBound bounds how long refusing a bad certificate may take.
const tlsFailBound = 15 * time.Second

// TestTLSHardening asserts every hardening property (checkHardening) in a
// sandbox on the TLS daemon, and that its runsc runs gVisor when
// /etc/docker/daemon.json registers it.
func TestTLSHardening(t *testing.T) {
	d := tlsDaemon(t)
	t.Setenv(hostCanary, "host-secret")
	e := d.Engine(t)
	t.Run("hardening", func(t *testing.T) { checkHardening(t, e, "") })
	t.Run("gvisor", func(t *testing.T) {
		info, err := d.Client(t).Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := info.Runtimes["runsc"]; !ok {
			t.Skip("runsc is not registered in /etc/docker/daemon.json")
		}
		spec := pySpec(t, "tls-gvisor")
		spec.OCIRuntime = "runsc"
		r := runPy(t, e, spec, "import os, platform\nprint(os.getuid(), platform.release())\n")
		if r.status.Code != 0 || r.stdout != "65534 4.4.0\n" {
			t.Fatalf("under runsc: %+v; want uid 65534 and gVisor's kernel 4.4.0", r)
		}
	})
}

// TestTLSBridgeSession runs the bridge (run, over stdio, driven by the
// go-sdk client) on the TLS daemon: state is kept from one run_python call
// to the next, the sandbox is on that daemon and not on the main one, and
// it is removed when the client disconnects.
func TestTLSBridgeSession(t *testing.T) {
	d := tlsDaemon(t)
	env := append([]string{"MCP_BRIDGE_RUNTIME=docker", "MCP_BRIDGE_LOG_LEVEL=WARN", "HOME=" + t.TempDir()}, d.Env()...)
	cs, cmd, _ := launchBridge(t, env, nil, nil)
	if text, isErr := runPython(t, cs, map[string]any{"code": "import os\nstate = os.getuid()\nprint(state)"}); isErr || text != "65534" {
		t.Fatalf("first call: %q (isError %v)", text, isErr)
	}
	if text, isErr := runPython(t, cs, map[string]any{"code": "print(state + 1)"}); isErr || text != "65535" {
		t.Fatalf("state across calls: %q (isError %v)", text, isErr)
	}
	tlsClient := d.Client(t)
	pid := cmd.Process.Pid
	if n := len(daemonContainers(t, tlsClient, pid)); n != 1 {
		t.Fatalf("%d containers of bridge %d on the TLS daemon, want 1", n, pid)
	}
	if n := len(daemonContainers(t, d.mainDaemon, pid)); n != 0 {
		t.Fatalf("%d containers of bridge %d on the main daemon, want 0", n, pid)
	}
	cs.Close()
	deadline := time.Now().Add(30 * time.Second)
	for len(daemonContainers(t, tlsClient, pid)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox container of bridge %d outlived its client", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// daemonContainers returns the IDs of the containers, running or not,
// that the bridge process pid owns on the daemon of c.
func daemonContainers(t testing.TB, c *client.Client, pid int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", engine.LabelPID+"="+strconv.Itoa(pid)))})
	if err != nil {
		t.Fatalf("listing the containers of bridge %d: %v", pid, err)
	}
	var ids []string
	for _, ct := range list {
		ids = append(ids, ct.ID)
	}
	return ids
}

// TestTLSBridgeProxiesNpmServer calls a real npm MCP server
// (server-everything, on the host) from code in a sandbox on the TLS
// daemon, through the bridge.
func TestTLSBridgeProxiesNpmServer(t *testing.T) {
	d := tlsDaemon(t)
	home, _ := npmHome(t)
	env := append([]string{"MCP_BRIDGE_RUNTIME=docker", "MCP_BRIDGE_LOG_LEVEL=WARN", "HOME=" + home}, d.Env()...)
	cs, _, _ := launchBridge(t, env, nil, nil)
	text, isErr := runPython(t, cs, map[string]any{"servers": []string{"everything"},
		"code": "s = await mcp_everything.get_sum(a=2, b=3)\nprint(s)\nprint(await mcp_everything.echo(message=f'sum is {s}'))"})
	if isErr || text != "The sum of 2 and 3 is 5.\nEcho: sum is The sum of 2 and 3 is 5." {
		t.Fatalf("calling server-everything from the sandbox: %q (isError %v)", text, isErr)
	}
}

// tlsBadCerts are DOCKER_CERT_PATH directories the TLS daemon, or its
// clients, must refuse.
type tlsBadCerts struct {
	// OtherCA holds a client certificate of another CA (and the right
	// ca.pem): the daemon refuses it.
	OtherCA string
	// CAOnly holds ca.pem alone: no client certificate.
	CAOnly string
	// Untrusted holds a good client certificate but another CA's ca.pem:
	// the client refuses the daemon's certificate.
	Untrusted string
}

// badCerts makes the tlsBadCerts of d in a temporary directory of t.
func (d *tlsDockerd) badCerts(t testing.TB) tlsBadCerts {
	t.Helper()
	dir := t.TempDir()
	b := tlsBadCerts{OtherCA: filepath.Join(dir, "other-ca"), CAOnly: filepath.Join(dir, "ca-only"), Untrusted: filepath.Join(dir, "untrusted")}
	caDir := filepath.Join(dir, "rogue-ca")
	os.Mkdir(caDir, 0o700)
	rogue, err := newTLSCA(caDir, "mcp-tls-rogue-ca")
	if err != nil {
		t.Fatal(err)
	}
	if err := rogue.issue(b.OtherCA, "mcp-tls-rogue-client", clientCertExt); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(b.CAOnly, 0o700)
	os.Mkdir(b.Untrusted, 0o700)
	for _, c := range []struct{ src, dst string }{
		{filepath.Join(d.CertPath, "ca.pem"), filepath.Join(b.OtherCA, "ca.pem")},
		{filepath.Join(d.CertPath, "ca.pem"), filepath.Join(b.CAOnly, "ca.pem")},
		{rogue.cert(), filepath.Join(b.Untrusted, "ca.pem")},
		{filepath.Join(d.CertPath, "cert.pem"), filepath.Join(b.Untrusted, "cert.pem")},
		{filepath.Join(d.CertPath, "key.pem"), filepath.Join(b.Untrusted, "key.pem")},
	} {
		if err := copyFile(c.src, c.dst); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestTLSBadCertificates checks that the TLS daemon refuses a client
// certificate of another CA and a client without one, that a client
// refuses a daemon certificate of a CA it does not trust, each within
// tlsFailBound with an error that says so, and that the bridge's exec
// command then prints one clear message and exits 125, without a panic.
func TestTLSBadCertificates(t *testing.T) {
	d := tlsDaemon(t)
	bad := d.badCerts(t)
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(d.CertPath, "ca.pem"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("reading the CA: %v", err)
	}
	noCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	t.Run("api", func(t *testing.T) {
		for _, c := range []struct {
			name string
			opt  client.Opt
			want string
		}{
			{"client cert of another CA", withCertPath(bad.OtherCA), tlsRefused},
			{"no client cert", client.WithHTTPClient(noCert), tlsRefused},
			{"daemon cert of an untrusted CA", withCertPath(bad.Untrusted), "x509: certificate signed by unknown authority"},
			{"good client cert", withCertPath(d.CertPath), ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				cli, err := client.NewClientWithOpts(client.WithHost(d.Host), c.opt, client.WithAPIVersionNegotiation())
				if err != nil {
					t.Fatal(err)
				}
				defer cli.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 2*tlsFailBound)
				defer cancel()
				began := time.Now()
				_, err = cli.Ping(ctx)
				took := time.Since(began)
				switch {
				case c.want == "" && err != nil:
					t.Fatalf("ping with the good certificate: %v", err)
				case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
					t.Fatalf("ping: %v; want an error saying %q", err, c.want)
				case took > tlsFailBound:
					t.Fatalf("ping took %v, more than %v", took, tlsFailBound)
				}
				t.Logf("%v in %v", err, took.Round(time.Millisecond))
			})
		}
	})

	t.Run("exec", func(t *testing.T) {
		for _, c := range []struct {
			name string
			env  []string
			want string
		}{
			{"client cert of another CA", []string{"DOCKER_TLS_VERIFY=1", "DOCKER_CERT_PATH=" + bad.OtherCA}, tlsRefused},
			{"no client cert", []string{"DOCKER_TLS_VERIFY=1", "DOCKER_CERT_PATH=" + bad.CAOnly}, "cert.pem"},
			{"no TLS", []string{"DOCKER_TLS_VERIFY=", "DOCKER_CERT_PATH="}, "HTTP request to an HTTPS server"},
			{"daemon cert of an untrusted CA", []string{"DOCKER_TLS_VERIFY=1", "DOCKER_CERT_PATH=" + bad.Untrusted}, "certificate signed by unknown authority"},
		} {
			t.Run(c.name, func(t *testing.T) {
				env := append([]string{"MCP_BRIDGE_RUNTIME=docker", "HOME=" + t.TempDir(), "DOCKER_HOST=" + d.Host}, c.env...)
				began := time.Now()
				stdout, stderr, code := runCLIWithin(t, 2*tlsFailBound, env, "exec", "-c", "print(1)")
				took := time.Since(began)
				msg := strings.TrimSpace(stderr)
				if code != 125 || stdout != "" || !strings.Contains(msg, c.want) || !strings.Contains(msg, d.Host) ||
					strings.Contains(msg, "\n") || strings.Contains(msg, "panic") || strings.Contains(msg, "goroutine ") {
					t.Fatalf("exec: code %d, stdout %q, stderr %q; want 125 and one line naming %s and saying %q", code, stdout, stderr, d.Host, c.want)
				}
				if took > tlsFailBound {
					t.Fatalf("exec took %v, more than %v", took, tlsFailBound)
				}
				t.Logf("%s (%v)", msg, took.Round(time.Millisecond))
			})
		}
	})
}

// withCertPath is the client option of the certificates in dir, laid
// out as DOCKER_CERT_PATH.
func withCertPath(dir string) client.Opt {
	return client.WithTLSClientConfig(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
}

// runCLIWithin runs the built binary with args and env added to the
// process environment (later entries win), killing it after timeout.
func runCLIWithin(t *testing.T, timeout time.Duration, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(envWithout("MCP_BRIDGE_RUNTIME", "MCP_BRIDGE_ENGINES"), env...)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%v did not end within %v; stderr %q", args, timeout, errb.String())
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// TestTLSDaemonRestart stops the TLS daemon and starts it again (Stop,
// Start): it answers at the same address, with its images, and a sandbox
// starts on it.
func TestTLSDaemonRestart(t *testing.T) {
	d := tlsDaemon(t)
	c := d.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	d.Stop(t)
	stopped := time.Since(began)
	if _, err := c.Ping(ctx); err == nil {
		t.Fatal("the daemon answers after Stop")
	}
	began = time.Now()
	d.Start(t)
	t.Logf("stopped in %v, started again in %v", stopped.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	image := settings(t).Session.Spec.Image
	if _, err := c.ImageInspect(ctx, image); err != nil {
		t.Fatalf("the image after a restart: %v", err)
	}
	r := runPy(t, d.Engine(t), pySpec(t, "tls-restart"), "print(6 * 7)\n")
	if r.stdout != "42\n" || r.status.Code != 0 {
		t.Fatalf("a sandbox after a restart: %+v", r)
	}
}
