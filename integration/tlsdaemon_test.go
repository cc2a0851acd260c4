//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/docker"
)

// A tlsDockerd is a second Docker daemon that the tests start themselves,
// reachable only at a loopback TCP port over mutual TLS, as a remote
// engine is. It has its own data and exec roots, pid file, log and
// containerd (managed by it, in its own namespace), no bridge network and
// no iptables rules, so the main daemon (/var/run/docker.sock) is not
// disturbed; it knows the OCI runtimes of /etc/docker/daemon.json and
// runs runc by default. The sandbox image (MCP_BRIDGE_IMAGE) is copied
// into it from the main daemon when it first starts.
//
// One runs per test process: tlsDaemon starts it on first use, TestMain
// stops it and removes its files (stopTLSDaemon). Tests reach it with
// Env (a bridge process), Engine (an engine in the test) or Client (the
// Docker API); Stop and Start stop and restart it mid-test, on the same
// address and data root, so its images stay loaded.
type tlsDockerd struct {
	// Host is the daemon's address, "tcp://127.0.0.1:PORT".
	Host string
	// CertPath is a directory laid out as DOCKER_CERT_PATH expects:
	// ca.pem (the CA of the daemon's certificate), cert.pem and key.pem
	// (a client certificate and key that the daemon accepts).
	CertPath string

	dir        string         // all of its files: certificates, roots, pid file, log
	args       []string       // dockerd's arguments
	mainDaemon *client.Client // the main daemon, where images come from

	// Timings of the first start, for the test log.
	certified, started, loaded time.Duration

	mu     sync.Mutex
	cmd    *exec.Cmd     // the running dockerd; nil when stopped
	exited chan struct{} // closed once cmd has exited
}

var (
	tlsOnce     sync.Once
	tlsD        *tlsDockerd
	tlsErr      error
	tlsReported bool
)

// tlsPrefix begins the name of a tlsDockerd's directory in os.TempDir():
// short, since its unix sockets (containerd's) live under it.
const tlsPrefix = "mcp-tlsd-"

// tlsReadyTimeout bounds the wait for a starting daemon to answer.
const tlsReadyTimeout = 60 * time.Second

// tlsDaemon returns the test process's TLS Docker daemon, starting it
// (certificates, daemon, sandbox image) on first use and again if a test
// left it stopped. It skips t when dockerd is not installed and Docker is
// not an engine under test (MCP_TEST_ENGINES); otherwise any failure
// fails t.
func tlsDaemon(t testing.TB) *tlsDockerd {
	t.Helper()
	if _, err := exec.LookPath("dockerd"); err != nil {
		if !slices.Contains(engineNames(), "docker") {
			t.Skipf("dockerd is not installed and docker is not under test (MCP_TEST_ENGINES): %v", err)
		}
		t.Fatalf("docker is under test (MCP_TEST_ENGINES) but dockerd is not installed: %v", err)
	}
	tlsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		tlsD, tlsErr = startTLSDockerd(ctx)
	})
	if tlsErr != nil {
		t.Fatalf("starting the TLS Docker daemon: %v", tlsErr)
	}
	d := tlsD
	d.mu.Lock()
	if !tlsReported {
		tlsReported = true
		t.Logf("TLS dockerd at %s: certificates made in %v, started in %v, sandbox image loaded in %v", d.Host,
			d.certified.Round(time.Millisecond), d.started.Round(time.Millisecond), d.loaded.Round(time.Millisecond))
	}
	running := d.cmd != nil
	d.mu.Unlock()
	if !running {
		d.Start(t)
	}
	return d
}

// startTLSDockerd makes the certificates and directories of a new daemon,
// starts it and loads the sandbox image into it.
func startTLSDockerd(ctx context.Context) (d *tlsDockerd, err error) {
	removeStaleTLSDirs()
	cfg, err := config.Load(nil)
	if err != nil {
		return nil, fmt.Errorf("reading the settings: %w", err)
	}
	mainDaemon, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("connecting the main Docker daemon: %w", err)
	}
	dir, err := os.MkdirTemp("", tlsPrefix)
	if err != nil {
		mainDaemon.Close()
		return nil, fmt.Errorf("making its directory: %w", err)
	}
	d = &tlsDockerd{dir: dir, mainDaemon: mainDaemon, CertPath: filepath.Join(dir, "client")}
	defer func() {
		if err != nil {
			if serr := d.shutdown(); serr != nil {
				err = errors.Join(err, serr)
			}
			d = nil
		}
	}()
	// The owner file tells removeStaleTLSDirs whose directory this is.
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return d, fmt.Errorf("writing its owner: %w", err)
	}
	began := time.Now()
	if err := d.makeCerts(); err != nil {
		return d, err
	}
	d.certified = time.Since(began)
	cfgFile, err := d.writeConfig()
	if err != nil {
		return d, err
	}
	port, err := freePort()
	if err != nil {
		return d, err
	}
	d.Host = "tcp://127.0.0.1:" + strconv.Itoa(port)
	server := filepath.Join(dir, "server")
	d.args = []string{
		"--config-file", cfgFile,
		"--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"),
		// Its own containerd (a distinct exec root starts one), and
		// namespaces of its own even if it found a shared one.
		"--containerd-namespace", "mcp-tls",
		"--containerd-plugins-namespace", "mcp-tls-plugins",
		// No network of its own and no change to the host's.
		"--bridge=none", "--iptables=false", "--ip-masq=false", "--ip-forward=false",
		"--default-runtime", "runc",
		"--shutdown-timeout", "5",
		"--host", d.Host,
		"--tlsverify",
		"--tlscacert", filepath.Join(server, "ca.pem"),
		"--tlscert", filepath.Join(server, "cert.pem"),
		"--tlskey", filepath.Join(server, "key.pem"),
	}
	began = time.Now()
	if err := d.start(ctx); err != nil {
		return d, err
	}
	d.started = time.Since(began)
	began = time.Now()
	if err := d.loadImage(ctx, cfg.Session.Spec.Image); err != nil {
		return d, err
	}
	d.loaded = time.Since(began)
	return d, nil
}

// makeCerts makes the CA, the daemon's certificate (server/) and the
// client's (client/, CertPath).
func (d *tlsDockerd) makeCerts() error {
	caDir := filepath.Join(d.dir, "ca")
	if err := os.Mkdir(caDir, 0o700); err != nil {
		return fmt.Errorf("making the certificates: %w", err)
	}
	ca, err := newTLSCA(caDir, "mcp-tls-test-ca")
	if err != nil {
		return fmt.Errorf("making the certificates: %w", err)
	}
	if err := ca.issue(filepath.Join(d.dir, "server"), "localhost", serverCertExt); err != nil {
		return fmt.Errorf("making the certificates: %w", err)
	}
	if err := ca.issue(d.CertPath, "mcp-tls-test-client", clientCertExt); err != nil {
		return fmt.Errorf("making the certificates: %w", err)
	}
	return nil
}

// writeConfig writes the daemon's configuration file: the runtimes of
// the main daemon's /etc/docker/daemon.json (such as runsc, whose
// arguments --add-runtime cannot give), nothing else of it. dockerd
// reads /etc/docker/daemon.json unless it is given a file.
func (d *tlsDockerd) writeConfig() (string, error) {
	cfg := map[string]json.RawMessage{}
	data, err := os.ReadFile("/etc/docker/daemon.json")
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("reading the main daemon's configuration: %w", err)
	default:
		var main map[string]json.RawMessage
		if err := json.Unmarshal(data, &main); err != nil {
			return "", fmt.Errorf("reading the main daemon's configuration: %w", err)
		}
		if rt, ok := main["runtimes"]; ok {
			cfg["runtimes"] = rt
		}
	}
	data, _ = json.Marshal(cfg)
	path := filepath.Join(d.dir, "daemon.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("writing the daemon's configuration: %w", err)
	}
	return path, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Env returns the variables that point a Docker client (a bridge
// process, the docker CLI) at the daemon: DOCKER_HOST, DOCKER_TLS_VERIFY=1
// and DOCKER_CERT_PATH. Append them to a command's environment.
func (d *tlsDockerd) Env() []string {
	return []string{"DOCKER_HOST=" + d.Host, "DOCKER_TLS_VERIFY=1", "DOCKER_CERT_PATH=" + d.CertPath}
}

// Client returns a Docker API client of the daemon, with the client
// certificate of CertPath; it is closed when t ends.
func (d *tlsDockerd) Client(t testing.TB) *client.Client {
	t.Helper()
	c, err := d.newClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newClient returns a Docker API client of the daemon.
func (d *tlsDockerd) newClient() (*client.Client, error) {
	c, err := client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation(),
		client.WithTLSClientConfig(filepath.Join(d.CertPath, "ca.pem"), filepath.Join(d.CertPath, "cert.pem"), filepath.Join(d.CertPath, "key.pem")))
	if err != nil {
		return nil, fmt.Errorf("making a client of the TLS daemon: %w", err)
	}
	return c, nil
}

// Engine connects the engine package's Docker backend to the daemon as a
// bridge process does, through the environment: it sets Env's variables
// for the rest of t (t.Setenv, so not in parallel tests; a docker CLI or
// engine the test starts later reaches this daemon too) and calls
// docker.New, which reads them. The engine is closed when t ends.
func (d *tlsDockerd) Engine(t testing.TB) testEngine {
	t.Helper()
	for _, kv := range d.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := docker.New(ctx, &docker.Options{Logger: testLogger()})
	if err != nil {
		t.Fatalf("connecting an engine to the TLS daemon: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// LoadImage copies the image ref from the main daemon into this one,
// unless it is there already (such as MCP_BRIDGE_IMAGE, loaded at the
// start).
func (d *tlsDockerd) LoadImage(t testing.TB, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := d.loadImage(ctx, ref); err != nil {
		t.Fatal(err)
	}
}

// loadImage copies the image ref from the main daemon into this one,
// streaming ImageSave into ImageLoad, unless it is there already.
func (d *tlsDockerd) loadImage(ctx context.Context, ref string) error {
	c, err := d.newClient()
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ImageInspect(ctx, ref); err == nil {
		return nil
	}
	rc, err := d.mainDaemon.ImageSave(ctx, []string{ref})
	if err != nil {
		return fmt.Errorf("saving %s from the main daemon: %w", ref, err)
	}
	defer rc.Close()
	resp, err := c.ImageLoad(ctx, rc, client.ImageLoadWithQuiet(true))
	if err != nil {
		return fmt.Errorf("loading %s: %w", ref, err)
	}
	defer resp.Body.Close()
	// The answer is a stream of JSON messages, any of which may be an
	// error (such as a save cut short).
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("loading %s: reading the answer: %w", ref, err)
		}
		if m.Error != "" {
			return fmt.Errorf("loading %s: %s", ref, m.Error)
		}
	}
	if _, err := c.ImageInspect(ctx, ref); err != nil {
		return fmt.Errorf("loading %s: %w", ref, err)
	}
	return nil
}

// Start starts the daemon again after Stop, on the same address and data
// root, and waits until it answers; it does nothing when it runs.
func (d *tlsDockerd) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*tlsReadyTimeout)
	defer cancel()
	if err := d.start(ctx); err != nil {
		t.Fatal(err)
	}
}

// Stop stops the daemon (SIGTERM; its containers get 5 s to stop) and
// waits for it to exit; it does nothing when it is stopped. A later
// tlsDaemon or Start starts it again.
func (d *tlsDockerd) Stop(t testing.TB) {
	t.Helper()
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
}

// start starts dockerd and waits, by polling for at most tlsReadyTimeout,
// until it answers a ping over TLS. A failure reports the end of its log.
func (d *tlsDockerd) start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd != nil {
		return nil
	}
	logFile, err := os.OpenFile(d.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("starting dockerd: %w", err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "\n=== %s integration test: dockerd %s\n", time.Now().Format(time.RFC3339), strings.Join(d.args, " "))
	cmd := exec.Command("dockerd", d.args...)
	cmd.Dir = d.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, out of reach of a terminal's ^C to the
	// tests, and a SIGTERM when the test process dies before stopping
	// it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting dockerd: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	d.cmd, d.exited = cmd, exited

	c, err := d.newClient()
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(tlsReadyTimeout)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.Ping(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			d.stopLocked() // its containerd, if it outlived it
			return fmt.Errorf("starting dockerd: it exited (%v) before answering at %s%s", cmd.ProcessState, d.Host, d.logTail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			d.stopLocked()
			return fmt.Errorf("starting dockerd: no answer at %s within %v (last: %v)%s", d.Host, tlsReadyTimeout, err, d.logTail())
		}
	}
}

// stop stops dockerd: SIGTERM, then SIGKILL if it has not exited after
// 30 s, and then its containerd and shims if they outlived it.
func (d *tlsDockerd) stop() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stopLocked()
}

// stopLocked is stop with d.mu held.
func (d *tlsDockerd) stopLocked() error {
	if d.cmd == nil {
		return nil
	}
	cmd, exited := d.cmd, d.exited
	d.cmd = nil
	cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
		err = fmt.Errorf("stopping dockerd: it did not exit within 30 s of SIGTERM: killed it%s", d.logTail())
	}
	// Its containerd and shims, when they outlive it (a killed dockerd
	// leaves them): every process that names this daemon's directory.
	deadline := time.Now().Add(5 * time.Second)
	for len(processesNaming(d.dir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if pids := processesNaming(d.dir); len(pids) > 0 {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		err = errors.Join(err, fmt.Errorf("stopping dockerd: killed the processes %v it left behind", pids))
	}
	return err
}

// shutdown removes every container of the daemon, stops it and removes
// its directory.
func (d *tlsDockerd) shutdown() error {
	var errs []error
	d.mu.Lock()
	running := d.cmd != nil
	d.mu.Unlock()
	if running {
		errs = append(errs, d.removeContainers())
	}
	errs = append(errs, d.stop())
	if d.mainDaemon != nil {
		d.mainDaemon.Close()
	}
	if err := unmountUnder(d.dir); err != nil {
		errs = append(errs, err)
	} else if err := os.RemoveAll(d.dir); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", d.dir, err))
	}
	return errors.Join(errs...)
}

// removeContainers removes every container of the daemon, running or not.
func (d *tlsDockerd) removeContainers() error {
	c, err := d.newClient()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := c.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return fmt.Errorf("listing the containers left: %w", err)
	}
	var errs []error
	for _, ct := range list {
		if err := c.ContainerRemove(ctx, ct.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, fmt.Errorf("removing container %.12s: %w", ct.ID, err))
		}
	}
	return errors.Join(errs...)
}

// logPath is the daemon's log file.
func (d *tlsDockerd) logPath() string { return filepath.Join(d.dir, "dockerd.log") }

// logTail returns the last lines of the daemon's log, for an error.
func (d *tlsDockerd) logTail() string {
	data, err := os.ReadFile(d.logPath())
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return "\n--- last lines of " + d.logPath() + ":\n" + strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// stopTLSDaemon stops the test process's TLS daemon, if one started,
// removing its containers and files. TestMain calls it after the tests.
func stopTLSDaemon() error {
	if tlsD == nil {
		return nil
	}
	return tlsD.shutdown()
}

// processesNaming returns the pids of the processes whose command line
// contains dir.
func processesNaming(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// unmountUnder detaches every mount at or under dir, deepest first, so
// that removing dir never walks into a mounted file system (dockerd
// mounts its data root and its containers' file systems there).
func unmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("listing mounts: %w", err)
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// removeStaleTLSDirs removes the directories of TLS daemons whose test
// process died without removing them (killed, or timed out), once their
// dockerd is gone too (the SIGTERM of its parent's death stops it).
func removeStaleTLSDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tlsPrefix+"*"))
	for _, dir := range dirs {
		if pidFileAlive(filepath.Join(dir, "owner")) || pidFileAlive(filepath.Join(dir, "dockerd.pid")) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "owner")); err != nil {
			continue // not ours, or being made
		}
		if unmountUnder(dir) == nil {
			os.RemoveAll(dir)
		}
	}
}

// pidFileAlive reports whether path names the pid of a live process.
func pidFileAlive(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return err == nil && pid > 0 && syscall.Kill(pid, 0) == nil
}
