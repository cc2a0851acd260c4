package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"
)

// A fakeDocker is a dockerAPI with no daemon behind it. Its containers run
// program, a Go function, in place of a process: attached, the function
// reads the container's stdin and writes its multiplexed output over a
// socket pair, as the daemon does over the hijacked connection; not
// attached, its output is lost, as the daemon's is.
type fakeDocker struct {
	t *testing.T

	mu sync.Mutex
	// Set by the test before use.
	images     map[string]bool // the images present
	pull       string          // the progress stream ImagePull returns
	program    func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int
	oomKilled  bool   // ContainerInspect's State.OOMKilled
	oomLate    int    // when oomKilled, the inspections that do not report it yet
	inspected  int    // ContainerInspect calls made
	stateError string // ContainerInspect's State.Error
	waitError  string // ContainerWait's WaitResponse.Error
	list       []container.Summary
	volumes    []*volume.Volume  // VolumeList's answer, less those removed
	archives   map[string][]byte // CopyFromContainer's archive of a path
	stats      string            // ContainerStatsOneShot's body
	// fail, when not nil, is asked before each call whether it fails.
	fail func(method, id string) error

	// Recorded.
	calls      []string // "Method id", in call order
	containers map[string]*fakeContainer
	created    int
	stopOpts   []container.StopOptions
	listOpts   []container.ListOptions
	volumeOpts []volume.ListOptions
	copiedIn   []fakeCopyIn
	// archivesOpen counts the archives returned and not closed yet.
	archivesOpen int
	closed       int
}

// A fakeCopyIn records a call of CopyToContainer.
type fakeCopyIn struct {
	id, dir string
	data    []byte
	opts    container.CopyToContainerOptions
}

// A fakeContainer is a container of a fakeDocker.
type fakeContainer struct {
	id, name string
	cfg      *container.Config
	host     *container.HostConfig
	conn     net.Conn      // the daemon's end of the attached connection
	cancel   func()        // ends program
	exited   chan struct{} // closed at exit, when code is set
	code     int
	started  bool
}

func newFakeDocker(t *testing.T) *fakeDocker {
	return &fakeDocker{
		t:          t,
		images:     map[string]bool{defaults.Image: true},
		containers: map[string]*fakeContainer{},
		program: func(_ context.Context, stdin io.Reader, stdout, _ io.Writer) int {
			io.Copy(stdout, stdin)
			return 0
		},
	}
}

// call records a call and returns the error fail chooses for it.
func (f *fakeDocker) call(method, id string) error {
	f.calls = append(f.calls, strings.TrimSpace(method+" "+id))
	if f.fail != nil {
		return f.fail(method, id)
	}
	return nil
}

// setFail replaces fail, safely while sandboxes run.
func (f *fakeDocker) setFail(fail func(method, id string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fail
}

// Calls returns the calls made so far.
func (f *fakeDocker) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// container returns container id, or a "not found" error.
func (f *fakeDocker) container(id string) (*fakeContainer, error) {
	c, ok := f.containers[id]
	if !ok {
		return nil, fmt.Errorf("no such container: %s: %w", id, cerrdefs.ErrNotFound)
	}
	return c, nil
}

// exit ends c with code, once; f.mu is held.
func (f *fakeDocker) exit(c *fakeContainer, code int) {
	select {
	case <-c.exited:
		return
	default:
	}
	c.code = code
	c.cancel()
	if c.conn != nil {
		c.conn.Close()
	}
	close(c.exited)
}

func (f *fakeDocker) Ping(context.Context) (types.Ping, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("Ping", ""); err != nil {
		return types.Ping{}, err
	}
	return types.Ping{APIVersion: "1.47"}, nil
}

func (f *fakeDocker) ClientVersion() string { return "1.47" }

func (f *fakeDocker) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ImageInspect", ref); err != nil {
		return image.InspectResponse{}, err
	}
	if !f.images[ref] {
		return image.InspectResponse{}, fmt.Errorf("no such image: %s: %w", ref, cerrdefs.ErrNotFound)
	}
	return image.InspectResponse{ID: "sha256:" + ref}, nil
}

func (f *fakeDocker) ImagePull(_ context.Context, ref string, _ image.PullOptions) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ImagePull", ref); err != nil {
		return nil, err
	}
	f.images[ref] = true
	return io.NopCloser(strings.NewReader(f.pull)), nil
}

func (f *fakeDocker) ContainerCreate(_ context.Context, cfg *container.Config, host *container.HostConfig,
	_ *network.NetworkingConfig, _ *ocispec.Platform, name string) (container.CreateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ContainerCreate", name); err != nil {
		return container.CreateResponse{}, err
	}
	f.created++
	id := fmt.Sprintf("%064x", f.created)
	f.containers[id] = &fakeContainer{id: id, name: name, cfg: cfg, host: host, cancel: func() {}, exited: make(chan struct{})}
	return container.CreateResponse{ID: id}, nil
}

func (f *fakeDocker) ContainerAttach(_ context.Context, id string, _ container.AttachOptions) (types.HijackedResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ContainerAttach", id); err != nil {
		return types.HijackedResponse{}, err
	}
	c, err := f.container(id)
	if err != nil {
		return types.HijackedResponse{}, err
	}
	cli, daemon := socketPair(f.t)
	c.conn = daemon
	return types.HijackedResponse{Conn: cli, Reader: bufio.NewReader(cli)}, nil
}

func (f *fakeDocker) ContainerStart(_ context.Context, id string, _ container.StartOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ContainerStart", id); err != nil {
		return err
	}
	c, err := f.container(id)
	if err != nil {
		return err
	}
	var stdin io.Reader = strings.NewReader("")
	stdout, stderr := io.Discard, io.Discard
	if c.conn != nil {
		stdin = c.conn
		stdout = stdcopy.NewStdWriter(c.conn, stdcopy.Stdout)
		stderr = stdcopy.NewStdWriter(c.conn, stdcopy.Stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.started = true
	program := f.program
	go func() {
		code := program(ctx, stdin, stdout, stderr)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.exit(c, code)
	}()
	return nil
}

func (f *fakeDocker) ContainerWait(ctx context.Context, id string, _ container.WaitCondition) (<-chan container.WaitResponse, <-chan error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	statusC, errC := make(chan container.WaitResponse, 1), make(chan error, 1)
	if err := f.call("ContainerWait", id); err != nil {
		errC <- err
		return statusC, errC
	}
	c, err := f.container(id)
	if err != nil {
		errC <- err
		return statusC, errC
	}
	waitError := f.waitError
	go func() {
		select {
		case <-c.exited:
			r := container.WaitResponse{StatusCode: int64(c.code)}
			if waitError != "" {
				r.Error = &container.WaitExitError{Message: waitError}
			}
			statusC <- r
		case <-ctx.Done():
			errC <- ctx.Err()
		}
	}()
	return statusC, errC
}

func (f *fakeDocker) ContainerInspect(_ context.Context, id string) (container.InspectResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ContainerInspect", id); err != nil {
		return container.InspectResponse{}, err
	}
	f.inspected++
	c, err := f.container(id)
	if err != nil {
		return container.InspectResponse{}, err
	}
	running := c.started
	select {
	case <-c.exited:
		running = false
	default:
	}
	return container.InspectResponse{
		ContainerJSONBase: &container.ContainerJSONBase{
			ID:         id,
			State:      &container.State{Running: running, ExitCode: c.code, OOMKilled: f.oomKilled && f.inspected > f.oomLate, Error: f.stateError},
			HostConfig: c.host,
		},
		Config: c.cfg,
	}, nil
}

func (f *fakeDocker) ContainerKill(_ context.Context, id, signal string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ContainerKill", id+" "+signal); err != nil {
		return err
	}
	_, err := f.container(id)
	return err
}

func (f *fakeDocker) ContainerStop(ctx context.Context, id string, opts container.StopOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ContainerStop", id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f.stopOpts = append(f.stopOpts, opts)
	c, err := f.container(id)
	if err != nil {
		return err
	}
	f.exit(c, 137)
	return nil
}

func (f *fakeDocker) ContainerRemove(ctx context.Context, id string, _ container.RemoveOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ContainerRemove", id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := f.container(id)
	if err != nil {
		return err
	}
	f.exit(c, 137)
	delete(f.containers, id)
	return nil
}

func (f *fakeDocker) ContainerList(_ context.Context, opts container.ListOptions) ([]container.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ContainerList", ""); err != nil {
		return nil, err
	}
	f.listOpts = append(f.listOpts, opts)
	return slices.Clone(f.list), nil
}

func (f *fakeDocker) ContainerStatsOneShot(_ context.Context, id string) (container.StatsResponseReader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("ContainerStatsOneShot", id); err != nil {
		return container.StatsResponseReader{}, err
	}
	if _, err := f.container(id); err != nil {
		return container.StatsResponseReader{}, err
	}
	return container.StatsResponseReader{Body: io.NopCloser(strings.NewReader(f.stats)), OSType: "linux"}, nil
}

func (f *fakeDocker) CopyFromContainer(_ context.Context, id, path string) (io.ReadCloser, container.PathStat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("CopyFromContainer", id+" "+path); err != nil {
		return nil, container.PathStat{}, err
	}
	if _, err := f.container(id); err != nil {
		return nil, container.PathStat{}, err
	}
	a, ok := f.archives[path]
	if !ok {
		return nil, container.PathStat{}, fmt.Errorf("Could not find the file %s in container %s: %w", path, id, cerrdefs.ErrNotFound)
	}
	f.archivesOpen++
	return &fakeArchive{Reader: strings.NewReader(string(a)), f: f}, container.PathStat{Name: path}, nil
}

// A fakeArchive is an archive from CopyFromContainer; closing it is
// counted.
type fakeArchive struct {
	io.Reader
	f    *fakeDocker
	once sync.Once
}

func (a *fakeArchive) Close() error {
	a.once.Do(func() {
		a.f.mu.Lock()
		defer a.f.mu.Unlock()
		a.f.archivesOpen--
	})
	return nil
}

func (f *fakeDocker) CopyToContainer(_ context.Context, id, path string, content io.Reader, opts container.CopyToContainerOptions) error {
	data, err := io.ReadAll(content)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("CopyToContainer", id+" "+path); err != nil {
		return err
	}
	if _, err := f.container(id); err != nil {
		return err
	}
	f.copiedIn = append(f.copiedIn, fakeCopyIn{id: id, dir: path, data: data, opts: opts})
	return nil
}

func (f *fakeDocker) VolumeList(_ context.Context, opts volume.ListOptions) (volume.ListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("VolumeList", ""); err != nil {
		return volume.ListResponse{}, err
	}
	f.volumeOpts = append(f.volumeOpts, opts)
	return volume.ListResponse{Volumes: slices.Clone(f.volumes)}, nil
}

func (f *fakeDocker) VolumeRemove(_ context.Context, name string, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("VolumeRemove", name); err != nil {
		return err
	}
	i := slices.IndexFunc(f.volumes, func(v *volume.Volume) bool { return v.Name == name })
	if i < 0 {
		return fmt.Errorf("no such volume: %s: %w", name, cerrdefs.ErrNotFound)
	}
	f.volumes = slices.Delete(f.volumes, i, i+1)
	return nil
}

func (f *fakeDocker) VolumeCreate(_ context.Context, opts volume.CreateOptions) (volume.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("VolumeCreate", opts.Name); err != nil {
		return volume.Volume{}, err
	}
	if i := slices.IndexFunc(f.volumes, func(v *volume.Volume) bool { return v.Name == opts.Name }); i >= 0 {
		return *f.volumes[i], nil // the daemon answers with the existing volume
	}
	v := &volume.Volume{Name: opts.Name, Labels: opts.Labels, Driver: opts.Driver, CreatedAt: "2026-11-26T02:00:00Z"}
	f.volumes = append(f.volumes, v)
	return *v, nil
}

func (f *fakeDocker) VolumeInspect(_ context.Context, name string) (volume.Volume, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("VolumeInspect", name); err != nil {
		return volume.Volume{}, err
	}
	if i := slices.IndexFunc(f.volumes, func(v *volume.Volume) bool { return v.Name == name }); i >= 0 {
		return *f.volumes[i], nil
	}
	return volume.Volume{}, fmt.Errorf("no such volume: %s: %w", name, cerrdefs.ErrNotFound)
}

func (f *fakeDocker) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed++
	return f.call("Close", "")
}

// socketPair returns the two ends of a connected stream socket, which,
// unlike net.Pipe's, can be half-closed, as a hijacked connection can.
func socketPair(t *testing.T) (a, b net.Conn) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "fake-attach")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatalf("socketpair: %v", err)
		}
		conns[i] = c
	}
	return conns[0], conns[1]
}

// ContainerExecCreate implements dockerAPI: the fake runs no commands.
func (f *fakeDocker) ContainerExecCreate(context.Context, string, container.ExecOptions) (container.ExecCreateResponse, error) {
	return container.ExecCreateResponse{}, errors.New("fake docker: no exec")
}

// ContainerExecInspect implements dockerAPI: the fake runs no commands.
func (f *fakeDocker) ContainerExecInspect(context.Context, string) (container.ExecInspect, error) {
	return container.ExecInspect{}, errors.New("fake: no exec")
}

// ContainerExecAttach implements dockerAPI: the fake runs no commands.
func (f *fakeDocker) ContainerExecAttach(context.Context, string, container.ExecAttachOptions) (types.HijackedResponse, error) {
	return types.HijackedResponse{}, errors.New("fake docker: no exec")
}

// defaults is the spec of zero values with its defaults applied.
var defaults = engine.Spec{}.WithDefaults()
