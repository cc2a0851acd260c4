package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/cli/cli/connhelper"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// DockerOptions configure NewDocker. The zero value is ready to use.
type DockerOptions struct {
	// Host is the daemon address (unix://, tcp://, ssh://). Zero:
	// DOCKER_HOST, else the platform default socket.
	Host string
	// Logger receives progress and clean-up reports. Zero: discarded.
	Logger *slog.Logger
	// StopGrace is how long Close waits after SIGTERM before SIGKILL.
	// Zero: DefaultStopGrace.
	StopGrace time.Duration
}

// DefaultStopGrace is the default grace period between SIGTERM and SIGKILL.
const DefaultStopGrace = 2 * time.Second

// A Docker is an Engine on the Docker Engine API.
type Docker struct {
	cli    *client.Client
	host   string
	log    *slog.Logger
	owner  Owner
	grace  time.Duration
	images sync.Map // image reference → struct{}, once known present
	// left holds the containers whose removal failed, tried again at
	// every Start and at Close.
	left leftovers
}

// NewDocker connects to a Docker daemon, negotiates the API version, and
// removes containers left behind by bridge processes that no longer run.
func NewDocker(ctx context.Context, opts *DockerOptions) (*Docker, error) {
	if opts == nil {
		opts = &DockerOptions{}
	}
	host := opts.Host
	if host == "" {
		host = os.Getenv("DOCKER_HOST")
	}
	if host == "" {
		host = client.DefaultDockerHost
	}
	copts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if strings.HasPrefix(host, "ssh://") {
		helper, err := connhelper.GetConnectionHelper(host)
		if err != nil {
			return nil, fmt.Errorf("docker at %s: setting up ssh connection: %w", host, err)
		}
		copts = append(copts, client.WithHost(helper.Host), client.WithDialContext(helper.Dialer))
	} else {
		copts = append(copts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(copts...)
	if err != nil {
		return nil, fmt.Errorf("docker at %s: %w", host, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ping, err := cli.Ping(pctx)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker at %s: %w", host, err)
	}
	d := &Docker{
		cli:   cli,
		host:  host,
		log:   loggerOrDiscard(opts.Logger),
		owner: Self(),
		grace: opts.StopGrace,
	}
	if d.grace <= 0 {
		d.grace = DefaultStopGrace
	}
	d.log.Info("connected to docker", "host", host, "api", ping.APIVersion, "negotiated", cli.ClientVersion())
	d.removeOrphans(ctx)
	return d, nil
}

// Name returns "docker".
func (d *Docker) Name() string { return BackendDocker }

// Close tries once more to remove the containers whose removal failed and
// releases the client connection; sandboxes must be closed first.
func (d *Docker) Close() error {
	if d.left.len() > 0 {
		ctx, cancel := cleanupContext(cleanupTimeout)
		d.left.retry(ctx, d.log, BackendDocker, d.removeContainer)
		cancel()
	}
	return d.cli.Close()
}

// Start implements Engine.
func (d *Docker) Start(ctx context.Context, spec Spec) (_ Sandbox, err error) {
	defer func() {
		if err != nil && client.IsErrConnectionFailed(err) {
			err = fmt.Errorf("%w: docker at %s: %w", ErrNoEngine, d.host, err)
		}
	}()
	spec = spec.withDefaults()
	if len(spec.Cmd) == 0 {
		return nil, errors.New("starting sandbox: spec has no command")
	}
	d.left.retry(ctx, d.log, BackendDocker, d.removeContainer)
	began := time.Now()
	if err := d.ensureImage(ctx, spec.Image); err != nil {
		return nil, err
	}
	tracePhase(ctx, PhaseImage, began)
	began = time.Now()
	cfg, host := dockerConfig(spec, d.owner)
	created, err := d.cli.ContainerCreate(ctx, cfg, host, nil, nil, containerName(spec.Session))
	if err != nil {
		return nil, fmt.Errorf("creating container: %w", err)
	}
	tracePhase(ctx, PhaseCreate, began)
	sb := newDockerSandbox(d, created.ID, spec.MemoryBytes)
	if err := sb.attachAndStart(ctx); err != nil {
		sb.Close()
		return nil, err
	}
	return sb, nil
}

// ensureImage makes sure ref is present, pulling it when missing.
func (d *Docker) ensureImage(ctx context.Context, ref string) error {
	if _, ok := d.images.Load(ref); ok {
		return nil
	}
	_, err := d.cli.ImageInspect(ctx, ref)
	if err == nil {
		d.images.Store(ref, struct{}{})
		return nil
	}
	if !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("inspecting image %q: %w", ref, err)
	}
	d.log.Info("pulling sandbox image", "image", ref, "engine", "docker")
	rc, err := d.cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return pullError(ref, err)
	}
	defer rc.Close()
	if err := d.followPull(ref, rc); err != nil {
		return pullError(ref, err)
	}
	d.images.Store(ref, struct{}{})
	d.log.Info("pulled sandbox image", "image", ref)
	return nil
}

// followPull logs the progress messages of an image pull, each distinct
// status once per layer, and returns the pull's error, if any.
func (d *Docker) followPull(ref string, r io.Reader) error {
	dec := json.NewDecoder(io.LimitReader(r, 64<<20))
	seen := map[string]bool{}
	for {
		var m struct {
			ID          string `json:"id"`
			Status      string `json:"status"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading pull progress: %w", err)
		}
		if m.ErrorDetail != nil {
			return errors.New(m.ErrorDetail.Message)
		}
		if key := m.ID + "\x00" + m.Status; !seen[key] {
			seen[key] = true
			d.log.Info("pull progress", "image", ref, "layer", m.ID, "status", m.Status)
		}
	}
}

// List returns the containers of every bridge process on this engine.
func (d *Docker) List(ctx context.Context) ([]SandboxInfo, error) {
	list, err := d.cli.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", LabelBridge+"=1")),
	})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	out := make([]SandboxInfo, 0, len(list))
	for _, c := range list {
		out = append(out, SandboxInfo{ID: c.ID, Labels: c.Labels, State: string(c.State)})
	}
	return out, nil
}

// removeOrphans removes containers of bridge processes of this host that
// no longer run. Failures are logged, not returned: clean-up must not
// stop the bridge from serving.
func (d *Docker) removeOrphans(ctx context.Context) {
	removeOrphans(ctx, d.log, BackendDocker, d.owner, d.List, d.removeContainer)
}

// removeContainer force-removes container id; one already gone is no
// error.
func (d *Docker) removeContainer(ctx context.Context, id string) error {
	err := d.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// pullError wraps a failed pull with the image and the setting to change.
func pullError(ref string, err error) error {
	return fmt.Errorf("%w: image %q is not present and pulling it failed (set %s to an image the engine has): %v",
		ErrImage, ref, "MCP_BRIDGE_IMAGE", err)
}
