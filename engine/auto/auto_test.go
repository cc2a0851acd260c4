package auto

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

type fakeBackend struct{ name string }

func (f *fakeBackend) Start(context.Context, engine.Spec) (engine.Sandbox, error) {
	return nil, errors.New("fake")
}
func (f *fakeBackend) Name() string { return f.name }
func (f *fakeBackend) Close() error { return nil }

func fakeAuto(runtime string, dockerErr, podmanErr error, calls *[]string) *Auto {
	r := New(&engine.AutoOptions{Backend: runtime})
	r.docker = func(context.Context) (backend, error) {
		*calls = append(*calls, "docker")
		if dockerErr != nil {
			return nil, dockerErr
		}
		return &fakeBackend{"docker"}, nil
	}
	r.podman = func(_ context.Context, mayStart bool) (backend, error) {
		if mayStart {
			*calls = append(*calls, "podman+service")
		} else {
			*calls = append(*calls, "podman")
		}
		if podmanErr != nil {
			return nil, podmanErr
		}
		return &fakeBackend{"podman"}, nil
	}
	return r
}

func TestAutoSelection(t *testing.T) {
	down := errors.New("down")
	tests := []struct {
		runtime              string
		dockerErr, podmanErr error
		want                 string
		wantCalls            string
	}{
		{"", nil, nil, "podman", "podman"},
		{"", nil, down, "docker", "podman docker"},
		{"docker", nil, nil, "docker", "docker"},
		{"podman", nil, nil, "podman", "podman+service"},
		{"podman", nil, down, "", "podman+service"},
		{"", down, down, "", "podman docker podman+service"},
	}
	for _, tt := range tests {
		var calls []string
		r := fakeAuto(tt.runtime, tt.dockerErr, tt.podmanErr, &calls)
		b, err := r.backend(context.Background())
		got := ""
		if err == nil {
			got = b.Name()
		}
		if got != tt.want || strings.Join(calls, " ") != tt.wantCalls {
			t.Errorf("runtime=%q docker=%v podman=%v: got %q after %v, want %q after %q",
				tt.runtime, tt.dockerErr, tt.podmanErr, got, calls, tt.want, tt.wantCalls)
		}
	}
}

func TestAutoNoEngineErrorNamesEverything(t *testing.T) {
	var calls []string
	r := fakeAuto("", errors.New("docker at unix:///var/run/docker.sock: connection refused"),
		errors.New("podman: unix:///run/podman/podman.sock: no service listening"), &calls)
	_, err := r.Start(context.Background(), engine.Spec{Cmd: []string{"true"}})
	if !errors.Is(err, engine.ErrNoEngine) {
		t.Fatalf("err = %v, want ErrNoEngine", err)
	}
	for _, want := range []string{"docker.sock", "podman.sock", "DOCKER_HOST", "CONTAINER_HOST", "MCP_BRIDGE_RUNTIME", "scripts/provision"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestAutoRetriesAfterFailureAndCachesSuccess(t *testing.T) {
	var calls []string
	down := errors.New("down")
	r := fakeAuto("docker", down, nil, &calls)
	if _, err := r.backend(context.Background()); err == nil {
		t.Fatal("want error while docker is down")
	}
	r.docker = func(context.Context) (backend, error) {
		calls = append(calls, "docker")
		return &fakeBackend{"docker"}, nil
	}
	for range 3 {
		if _, err := r.backend(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("connect calls = %v, want one failed and one successful", calls)
	}
	r.Close()
	if _, err := r.backend(context.Background()); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

func TestNewAutoConnectsNothing(t *testing.T) {
	// New must not touch any engine: programs start instantly.
	r := New(&engine.AutoOptions{Backend: "docker"})
	if r.b != nil {
		t.Fatal("backend connected at construction")
	}
}

func TestAutoNoEngineHints(t *testing.T) {
	for _, tt := range []struct {
		err, want, not string
	}{
		{err: "Cannot connect to the Docker daemon at tcp://127.0.0.1:9. Is the docker daemon running?",
			want: "running? Start Docker or Podman", not: "?."},
		{err: "docker at tcp://h:1: connection refused", want: "connection refused. Start Docker"},
		{err: "docker at tcp://h:1: remote error: tls: bad certificate", want: "DOCKER_CERT_PATH", not: "Start Docker"},
		{err: `failed to append certificates from PEM file: "/x/ca.pem".`, want: `ca.pem". The engine's TLS`, not: ".."},
		{err: "Client sent an HTTP request to an HTTPS server.", want: "DOCKER_TLS_VERIFY=1", not: "server.."},
	} {
		var calls []string
		_, err := fakeAuto("docker", errors.New(tt.err), nil, &calls).Start(context.Background(), engine.Spec{Cmd: []string{"true"}})
		if !errors.Is(err, engine.ErrNoEngine) || !strings.Contains(err.Error(), tt.want) ||
			(tt.not != "" && strings.Contains(err.Error(), tt.not)) {
			t.Errorf("for %q: %v; want %q and no %q", tt.err, err, tt.want, tt.not)
		}
	}
}

func TestAutoHandsContextToBackend(t *testing.T) {
	a := New(&engine.AutoOptions{Backend: engine.BackendDocker, Context: "colima"})
	if d := a.dockerOptions(); d.Context != "colima" || d.Host != "" || d.CertPath != "" {
		t.Errorf("docker options %+v, want Context colima and no Host", d)
	}
	if p := a.podmanOptions(); p.Connection != "colima" || p.URI != "" {
		t.Errorf("podman options %+v, want Connection colima and no URI", p)
	}
	a = New(&engine.AutoOptions{Backend: engine.BackendDocker, Address: "tcp://h:1", CertPath: "/certs"})
	if d := a.dockerOptions(); d.Host != "tcp://h:1" || d.CertPath != "/certs" || d.Context != "" {
		t.Errorf("docker options %+v, want Host and CertPath, no Context", d)
	}
	if p := a.podmanOptions(); p.URI != "tcp://h:1" || p.Connection != "" {
		t.Errorf("podman options %+v, want URI, no Connection", p)
	}
}

func TestAutoDockerContextIsLookedUp(t *testing.T) {
	// The context reaches docker.New: a context not in the store is an
	// error naming it, though DOCKER_HOST is set (a context overrides it).
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
	t.Setenv("DOCKER_CONTEXT", "")
	a := New(&engine.AutoOptions{Backend: engine.BackendDocker, Context: "nosuchctx"})
	defer a.Close()
	_, err := a.Start(context.Background(), engine.Spec{Cmd: []string{"true"}})
	if !errors.Is(err, engine.ErrNoEngine) || !strings.Contains(err.Error(), `docker context "nosuchctx": not found`) {
		t.Fatalf("Start: %v; want ErrNoEngine naming the context", err)
	}
}

// TestAutoStartsPodmanLast: detecting, a Podman service is started for
// the bridge only when neither a Podman service answers nor Docker does.
func TestAutoStartsPodmanLast(t *testing.T) {
	var calls []string
	r := fakeAuto("", errors.New("down"), nil, &calls)
	r.podman = func(_ context.Context, mayStart bool) (backend, error) {
		if !mayStart {
			calls = append(calls, "podman")
			return nil, errors.New("no service listening")
		}
		calls = append(calls, "podman+service")
		return &fakeBackend{"podman"}, nil
	}
	b, err := r.backend(context.Background())
	if err != nil || b.Name() != "podman" || strings.Join(calls, " ") != "podman docker podman+service" {
		t.Fatalf("%v %v after %q", b, err, calls)
	}
}
