package docker

import (
	"context"
	"errors"
	"testing"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/system"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A describingDocker is a fakeDocker that also answers the version and
// info calls of Describe.
type describingDocker struct {
	*fakeDocker
	infoErr error
}

func (f *describingDocker) ServerVersion(context.Context) (types.Version, error) {
	return types.Version{Version: "20.10.24", APIVersion: "1.41"}, nil
}

func (f *describingDocker) Info(context.Context) (system.Info, error) {
	return system.Info{DefaultRuntime: "runc", MemoryLimit: true, PidsLimit: true, CPUCfsQuota: true}, f.infoErr
}

func TestDockerDescribe(t *testing.T) {
	f := &describingDocker{fakeDocker: newFakeDocker(t)}
	d, err := newDockerWithClient(context.Background(), f, dockerEndpoint{Host: fakeHost}, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := d.Describe(ctx)
	want := engine.Info{Backend: engine.BackendDocker, Version: "20.10.24", APIVersion: "1.41", Address: fakeHost, DefaultOCIRuntime: "runc"}
	if err != nil || got != want {
		t.Fatalf("Describe: %+v, %v; want %+v", got, err, want)
	}
	f.infoErr = errors.New("daemon busy")
	if _, err := d.Describe(ctx); err == nil || !errors.Is(err, f.infoErr) {
		t.Fatalf("Describe with a failing info call: %v", err)
	}

	// A client without the calls says so.
	plain := newTestDocker(t, newFakeDocker(t), nil)
	if _, err := plain.Describe(ctx); !errors.Is(err, errNoDescription) {
		t.Fatalf("Describe on a client that cannot: %v", err)
	}
}

func TestDockerHasAndPullImage(t *testing.T) {
	f := newFakeDocker(t)
	d := newTestDocker(t, f, nil)
	ctx := context.Background()
	if ok, err := d.HasImage(ctx, defaults.Image); !ok || err != nil {
		t.Fatalf("HasImage(%s): %v, %v", defaults.Image, ok, err)
	}
	if ok, err := d.HasImage(ctx, "other:1"); ok || err != nil {
		t.Fatalf("HasImage(other:1): %v, %v", ok, err)
	}
	f.pull = `{"status":"Pulling"}` + "\n"
	if err := d.PullImage(ctx, "other:1"); err != nil {
		t.Fatalf("PullImage: %v", err)
	}
	if indexOf(f.Calls(), "ImagePull other:1") < 0 {
		t.Fatalf("no pull among %v", f.Calls())
	}
}

func TestSandboxOCIRuntime(t *testing.T) {
	f := newFakeDocker(t)
	d := newTestDocker(t, f, nil)
	spec := pySpec
	spec.OCIRuntime = "runsc"
	_, _, _, sb := run(t, d, spec, "x")
	rr, ok := sb.(engine.OCIRuntimeReporter)
	if !ok {
		t.Fatalf("%T is no OCIRuntimeReporter", sb)
	}
	if got, err := rr.OCIRuntime(context.Background()); got != "runsc" || err != nil {
		t.Fatalf("OCIRuntime: %q, %v; want runsc", got, err)
	}
	sb.Close()
	if _, err := rr.OCIRuntime(context.Background()); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("OCIRuntime after Close: %v; want ErrClosed", err)
	}
}

// TestDockerPullProgress: a pull's messages reach the context's watcher
// as layers and bytes; the daemon's other messages are not layers.
func TestDockerPullProgress(t *testing.T) {
	f := newFakeDocker(t)
	d := newTestDocker(t, f, nil)
	f.pull = `{"status":"Pulling from library/python","id":"3.14-slim"}
{"status":"Pulling fs layer","id":"aaa"}
{"status":"Pulling fs layer","id":"bbb"}
{"status":"Already exists","id":"ccc"}
{"status":"Downloading","progressDetail":{"current":400,"total":1000},"id":"aaa"}
{"status":"Downloading","progressDetail":{"current":50,"total":200},"id":"bbb"}
{"status":"Downloading","progressDetail":{"current":9000,"total":10},"id":"bbb"}
{"status":"Pull complete","id":"aaa"}
{"status":"Digest: sha256:0123"}
`
	var got []engine.PullProgress
	ctx := engine.WithPullWatcher(context.Background(), func(p engine.PullProgress) { got = append(got, p) })
	if err := d.PullImage(ctx, "python:3.14-slim"); err != nil {
		t.Fatalf("PullImage: %v", err)
	}
	if len(got) != 7 {
		t.Fatalf("%d reports, want one per layer message (7): %+v", len(got), got)
	}
	last := got[len(got)-1]
	want := engine.PullProgress{Image: "python:3.14-slim", Layers: 3, LayersDone: 2, Bytes: 1050, Total: 1200}
	if last != want {
		t.Fatalf("last report %+v, want %+v (a size out of range ignored)", last, want)
	}
	if f := last.Fraction(); f < 0.87 || f > 0.88 {
		t.Fatalf("Fraction %v, want 1050/1200", f)
	}
}

// TestDockerWeakLimits: a daemon that applies memory, pids and CPU
// limits has none weak; one that lacks any is named with its cgroup
// version.
func TestDockerWeakLimits(t *testing.T) {
	if got := dockerWeakLimits(system.Info{MemoryLimit: true, PidsLimit: true, CPUCfsQuota: true, CgroupVersion: "1"}); got != "" {
		t.Errorf("a daemon applying every limit: %q", got)
	}
	got := dockerWeakLimits(system.Info{PidsLimit: true, CgroupVersion: "1"})
	if got != "the Docker daemon cannot apply memory, CPU limits (cgroup v1)" {
		t.Errorf("a rootless daemon on cgroup v1: %q", got)
	}
}
