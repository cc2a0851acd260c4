//go:build remote

package podman

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// podmanSocketCandidates lists the local service sockets to try, in
// order: the rootful one (as root), then the rootless one. CONTAINER_HOST,
// when set, replaces them; New takes it (and CONTAINER_CONNECTION)
// before, through resolvePodmanEndpoint, and asks for sockets only when
// neither is set.
func podmanSocketCandidates(getenv func(string) string, uid int) []string {
	if h := getenv("CONTAINER_HOST"); h != "" {
		return []string{h}
	}
	var c []string
	if uid == 0 {
		c = append(c, "unix:///run/podman/podman.sock")
	}
	if dir := getenv("XDG_RUNTIME_DIR"); dir != "" {
		c = append(c, "unix://"+filepath.Join(dir, "podman", "podman.sock"))
	} else if uid != 0 {
		c = append(c, "unix://"+filepath.Join("/run/user", strconv.Itoa(uid), "podman", "podman.sock"))
	}
	return c
}

// unixSocketAnswers reports whether a unix:// URI's socket accepts a
// connection. Other schemes are assumed reachable and left to the client.
func unixSocketAnswers(uri string) bool {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "unix" {
		return err == nil
	}
	c, err := net.DialTimeout("unix", u.Path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// A podmanService is a `podman system service` the bridge started because
// none was listening. It lives as long as the bridge.
type podmanService struct {
	cmd  *exec.Cmd
	dir  string
	URI  string
	done chan struct{}
	once sync.Once
}

// startPodmanService starts `podman system service` on a private socket
// and waits, by polling, until it accepts connections.
func startPodmanService(ctx context.Context, log *slog.Logger) (*podmanService, error) {
	bin, err := exec.LookPath("podman")
	if err != nil {
		return nil, errors.New("no podman service socket answers and the podman binary is not on PATH")
	}
	dir, err := os.MkdirTemp("", "mcp-bridge-podman-")
	if err != nil {
		return nil, fmt.Errorf("creating podman socket directory: %w", err)
	}
	sock := filepath.Join(dir, "podman.sock")
	cmd := exec.Command(bin, "system", "service", "--time=0", "unix://"+sock)
	cmd.Stdin = nil
	// Its own directory, not the user's: the service's conmon processes
	// inherit it and write files there (an "oom" file when a sandbox is
	// OOM-killed).
	cmd.Dir = dir
	// The service runs locally: a CONTAINER_HOST or CONTAINER_CONNECTION
	// in our environment would turn the podman CLI into a remote client
	// that has no service command (the connection files, read only by a
	// remote client, need no such care).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONTAINER_HOST=") && !strings.HasPrefix(kv, "CONTAINER_CONNECTION=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd.Stdout = nil // never our stdout: it carries MCP frames
	cmd.SysProcAttr = serviceProcAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting podman system service: %w", err)
	}
	s := &podmanService{cmd: cmd, dir: dir, URI: "unix://" + sock, done: make(chan struct{})}
	tail := &engine.LineTail{Max: 20}
	go func() {
		w := &engine.LineLogger{Log: log, Level: slog.LevelDebug, Msg: "podman service", Tail: tail}
		io.Copy(w, out)
		w.Flush()
	}()
	go func() { cmd.Wait(); close(s.done) }()
	log.Info("started podman system service for the bridge's lifetime", "binary", bin, "socket", sock, "pid", cmd.Process.Pid)

	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		if unixSocketAnswers(s.URI) {
			return s, nil
		}
		select {
		case <-s.done:
			s.Close()
			return nil, fmt.Errorf("podman system service exited at start: %s", orNoOutput(tail.String()))
		case <-deadline:
			s.Close()
			return nil, fmt.Errorf("podman system service did not listen on %s within 20s: %s", sock, orNoOutput(tail.String()))
		case <-ctx.Done():
			s.Close()
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// Close stops the service and removes its socket directory.
func (s *podmanService) Close() error {
	s.once.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
		os.RemoveAll(s.dir)
	})
	return nil
}

func orNoOutput(s string) string {
	if s == "" {
		return "(no output)"
	}
	return s
}
