//go:build integration

package integration

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/cmd/mcp-server-code-execution-mode/config"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// tcpProxy forwards connections on a loopback TCP port to a unix socket,
// standing in for an engine reached over the network: nothing of the
// bridge's filesystem is shared with the engine through it.
func tcpProxy(t *testing.T, socket string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("unix", socket)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				io.Copy(dst, src)
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					cw.CloseWrite()
				} else {
					dst.Close()
				}
			}
			go pipe(u, c)
			go pipe(c, u)
			t.Cleanup(func() { c.Close(); u.Close() })
		}
	}()
	return "tcp://" + ln.Addr().String()
}

func TestEnginesOverTCP(t *testing.T) {
	t.Parallel()
	for _, name := range engineNames() {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			socket := map[string]string{"docker": "/var/run/docker.sock", "podman": "/run/podman/podman.sock"}[name]
			e, err := openEngine(ctx, name, tcpProxy(t, socket))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			r := runPy(t, e, pySpec(t, "tcp"), "import sys\nprint(sys.stdin.read() == '', 6 * 7)\n")
			if r.stdout != "True 42\n" || r.status.Code != 0 {
				t.Fatalf("over tcp: %+v", r)
			}
		})
	}
}

func TestMissingImageNamesImageAndSetting(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		spec := pySpec(t, "noimage")
		spec.Image = "localhost:1/mcp-bridge-test/no-such-image:0"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sb, err := e.Start(ctx, spec)
		if err == nil {
			sb.Close()
			t.Fatal("Start with a missing, unpullable image succeeded")
		}
		if !errors.Is(err, engine.ErrImage) || !strings.Contains(err.Error(), spec.Image) || !strings.Contains(err.Error(), config.EnvImage) {
			t.Fatalf("err = %v; want ErrImage naming the image and %s", err, config.EnvImage)
		}
	})
}

func TestUnknownOCIRuntimeRefused(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		spec := pySpec(t, "ociruntime")
		spec.OCIRuntime = "no-such-runtime"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sb, err := e.Start(ctx, spec)
		if err == nil {
			sb.Close()
			t.Fatal("a sandbox started under an OCI runtime the engine does not have")
		}
		if !strings.Contains(err.Error(), "no-such-runtime") {
			t.Fatalf("err = %v; want it to name the runtime", err)
		}
		for _, s := range list(t, e) {
			if s.Labels[engine.LabelSession] == "ociruntime" {
				t.Fatalf("container %s of the refused sandbox was left behind", s.ID)
			}
		}
	})
}

// TestGVisorUnderDocker runs a sandbox under runsc, registered with dockerd
// by scripts/provision, and checks it is gVisor's kernel the code sees.
func TestGVisorUnderDocker(t *testing.T) {
	t.Parallel()
	if !slices.Contains(engineNames(), "docker") {
		t.Skip("docker is not under test")
	}
	e := connect(t, "docker")
	spec := pySpec(t, "gvisor")
	spec.OCIRuntime = "runsc"
	r := runPy(t, e, spec, "import os, platform\nprint(os.getuid(), platform.release())\n")
	if r.status.Code != 0 || r.stdout != "65534 4.4.0\n" {
		t.Fatalf("under runsc: %+v; want uid 65534 and gVisor's kernel 4.4.0", r)
	}
}
