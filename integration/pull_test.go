//go:build integration

package integration

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testMirror is where scripts/provision tells both engines docker.io's
// mirror listens (TEST_MIRROR): the registry of TestPullFromRegistry.
const testMirror = "127.0.0.1:5555"

// defaultImage is the image the bridge runs when MCP_BRIDGE_IMAGE is
// unset, as a user's engine names it.
const defaultImage = "python:3.14-slim"

// testImageLabel marks the image TestPullFromRegistry pushes as the
// default one (scripts/provision's TEST_IMAGE_LABEL).
const testImageLabel = "org.mcp-code-exec.test-image"

// startMirror serves a registry (go-containerregistry's, in memory) on
// testMirror until t ends, its blobs sent at about 16 MB/s so that a pull
// lasts long enough to be watched, as one from the Internet would.
func startMirror(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", testMirror)
	if err != nil {
		t.Fatalf("listening on %s, the engines' docker.io mirror (scripts/provision): %v", testMirror, err)
	}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			w = &slowWriter{ResponseWriter: w}
		}
		reg.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// A slowWriter sends a response at about 16 MB/s.
type slowWriter struct{ http.ResponseWriter }

func (s *slowWriter) Write(p []byte) (int, error) {
	const chunk = 256 << 10
	n := 0
	for len(p) > 0 {
		k := min(chunk, len(p))
		m, err := s.ResponseWriter.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
		time.Sleep(15 * time.Millisecond)
	}
	return n, nil
}

// pushSandboxImage copies the suite's sandbox image from Docker into the
// mirror as docker.io's library/python:3.14-slim, with one more layer of
// 24 MB of random bytes: the engines hold the sandbox image's own layer
// already, and this one they must download, at the mirror's pace.
func pushSandboxImage(t *testing.T) {
	t.Helper()
	src := os.Getenv("MCP_BRIDGE_IMAGE")
	if src == "" {
		t.Fatal("MCP_BRIDGE_IMAGE is not set (scripts/provision's exports)")
	}
	tar := filepath.Join(t.TempDir(), "image.tar")
	if out, err := exec.Command("docker", "save", "-o", tar, src).CombinedOutput(); err != nil {
		t.Fatalf("docker save %s: %v\n%s", src, err, out)
	}
	img, err := tarball.ImageFromPath(tar, nil)
	if err != nil {
		t.Fatalf("reading %s: %v", tar, err)
	}
	extra, err := random.Layer(24<<20, types.DockerLayer)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, extra); err != nil {
		t.Fatal(err)
	}
	// Labelled as the suite's: scripts/provision removes such an image
	// should a run die before its clean-up, never taking it for a user's
	// python:3.14-slim.
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	cf.Config.Labels[testImageLabel] = "TestPullFromRegistry"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	dst, err := name.NewTag(testMirror+"/library/"+defaultImage, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(dst, img); err != nil {
		t.Fatalf("pushing the sandbox image to the mirror: %v", err)
	}
}

// removeDefaultImage removes python:3.14-slim from engine name, so that
// the next start pulls it.
func removeDefaultImage(t *testing.T, engineName string) {
	t.Helper()
	cmd := exec.Command("docker", "image", "rm", "-f", defaultImage)
	if engineName == "podman" {
		cmd = exec.Command("podman", "--url", os.Getenv("CONTAINER_HOST"), "image", "rm", "-f", "docker.io/library/"+defaultImage)
	}
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "No such image") && !strings.Contains(string(out), "image not known") {
		t.Fatalf("removing %s from %s: %v\n%s", defaultImage, engineName, err, out)
	}
}

// TestPullFromRegistry pulls the default image as a user's engine would,
// by its name, from docker.io (here a registry on this machine that
// both engines take as docker.io's mirror), and checks that a person
// sees it: the first run_python of a bridge that has to pull sends
// notifications/progress naming the image and the layers so far, and
// answers; `pull` shows its progress on stderr and says the image is
// present. Not parallel: it removes the engines' python:3.14-slim.
func TestPullFromRegistry(t *testing.T) {
	startMirror(t)
	pushSandboxImage(t)
	// What the engines pulled is the suite's sandbox image under the
	// default name: it must not outlive the test, or provisioning would
	// take it for the default image.
	t.Cleanup(func() {
		for _, name := range engineNames() {
			removeDefaultImage(t, name)
		}
	})
	forEachEngine(t, func(t *testing.T, e testEngine) {
		env := append(envWithout("MCP_BRIDGE_IMAGE", "MCP_BRIDGE_RUNTIME"), "MCP_BRIDGE_RUNTIME="+e.Name())

		removeDefaultImage(t, e.Name())
		var mu sync.Mutex
		var messages []string
		copts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			messages = append(messages, r.Params.Message)
			mu.Unlock()
		}}
		cmd := exec.Command(binary(t), "run")
		cmd.Env = append(env, "MCP_BRIDGE_LOG_LEVEL=WARN")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "pull", Version: "1"}, copts).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(6 * 7)", "timeout": 60}}
		params.SetProgressToken("first-call")
		began := time.Now()
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "42") {
			t.Fatalf("the first call, pulling %s: %v %+v", defaultImage, err, res)
		}
		mu.Lock()
		got := append([]string(nil), messages...)
		mu.Unlock()
		pulling := 0
		for _, m := range got {
			if strings.HasPrefix(m, "pulling "+defaultImage+": ") && strings.Contains(m, " layers") {
				pulling++
			}
		}
		if pulling == 0 {
			t.Fatalf("no progress notification named the pull of %s and its layers: %q", defaultImage, got)
		}
		t.Logf("the first call answered in %v, after %d progress notifications of the pull (last: %q)",
			time.Since(began).Round(time.Millisecond), pulling, got[len(got)-1])

		// The bridge goes, and its sandbox with it: an image a container
		// uses stays, untagged, and would be found again by digest.
		cs.Close()
		removeDefaultImage(t, e.Name())
		var stdout, stderr bytes.Buffer
		pull := exec.CommandContext(ctx, binary(t), "pull")
		pull.Env, pull.Stdout, pull.Stderr = env, &stdout, &stderr
		if err := pull.Run(); err != nil {
			t.Fatalf("pull: %v\nstderr:\n%s", err, stderr.String())
		}
		for _, want := range []string{"pulling " + defaultImage + ": ", " layers", "pulled " + defaultImage + "\n"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("pull's stderr lacks %q:\n%s", want, stderr.String())
			}
		}
		if !strings.HasPrefix(stdout.String(), defaultImage+" is present (") {
			t.Errorf("pull's stdout: %q", stdout.String())
		}
	})
}
