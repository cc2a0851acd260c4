// Package docker is the Docker backend of package engine: sandboxes as
// containers of a Docker daemon, over the Docker Engine API
// (github.com/docker/docker/client), reached at DOCKER_HOST, through a
// Docker context, or at the default socket. Each container is hardened
// by dockerConfig, one pure function.
package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// A Docker is an Engine on the Docker Engine API.
type Docker struct {
	api dockerAPI
	e   *lifecycle.Engine
	// context is the Docker context the daemon's address comes from; ""
	// when none.
	context string
}

// New connects to a Docker daemon, negotiates the API version, and
// removes containers left behind by bridge processes that no longer run.
// It finds the daemon as the docker CLI does, contexts included (see
// Options.Host), and logs which it chose and why.
func New(ctx context.Context, opts *Options) (*Docker, error) {
	if opts == nil {
		opts = &Options{}
	}
	log := lifecycle.LoggerOrDiscard(opts.Logger)
	ep, err := resolveDockerEndpoint(opts, os.Getenv)
	if err != nil {
		return nil, err
	}
	if ep.Warning != "" {
		log.Warn("docker daemon address", "warning", ep.Warning)
	}
	log.Info("docker daemon address", ep.logArgs()...)
	copts, err := ep.clientOpts()
	if err != nil {
		return nil, err
	}
	if opts.CertPath != "" {
		copts = append(copts, client.WithTLSClientConfig(
			filepath.Join(opts.CertPath, "ca.pem"),
			filepath.Join(opts.CertPath, "cert.pem"),
			filepath.Join(opts.CertPath, "key.pem")))
	}
	cli, err := client.NewClientWithOpts(copts...)
	if err != nil {
		return nil, fmt.Errorf("docker at %s: %w", ep.where(), err)
	}
	return newDockerWithClient(ctx, cli, ep, opts)
}

// newDockerWithClient is New on a client already made for the
// daemon at ep. It pings the daemon and closes api when that fails.
func newDockerWithClient(ctx context.Context, api dockerAPI, ep dockerEndpoint, opts *Options) (*Docker, error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ping, err := api.Ping(pctx)
	if err != nil {
		api.Close()
		return nil, fmt.Errorf("docker at %s: %w", ep.where(), err)
	}
	d := &Docker{api: api, context: ep.Context}
	d.e = lifecycle.NewEngine(engine.BackendDocker, ep.Host, d, lifecycle.LoggerOrDiscard(opts.Logger), opts.StopGrace)
	d.e.AllowWeakLimits = opts.AllowWeakLimits
	args := []any{"host", ep.Host}
	if ep.Context != "" {
		args = append(args, "context", ep.Context)
	}
	d.e.Log.Info("connected to docker", append(args, "api", ping.APIVersion, "negotiated", api.ClientVersion())...)
	d.e.RemoveOrphans(ctx)
	return d, nil
}

// Name returns "docker".
func (d *Docker) Name() string { return engine.BackendDocker }

// Close tries once more to remove the containers whose removal failed and
// releases the client connection; sandboxes must be closed first.
func (d *Docker) Close() error {
	d.e.Close()
	return d.api.Close()
}

// Start implements Engine.
func (d *Docker) Start(ctx context.Context, spec engine.Spec) (engine.Sandbox, error) {
	return d.e.Start(ctx, spec)
}

// List returns the containers of every bridge process on this engine.
func (d *Docker) List(ctx context.Context) ([]engine.SandboxInfo, error) {
	list, err := d.api.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", engine.LabelBridge+"=1")),
	})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	out := make([]engine.SandboxInfo, 0, len(list))
	for _, c := range list {
		out = append(out, engine.SandboxInfo{ID: c.ID, Labels: c.Labels, State: string(c.State)})
	}
	return out, nil
}

// LabelledVolumes implements lifecycle.VolumeAPI: the volumes of every bridge process.
func (d *Docker) LabelledVolumes(ctx context.Context) ([]lifecycle.LabelledVolume, error) {
	list, err := d.api.VolumeList(ctx, volume.ListOptions{
		Filters: filters.NewArgs(filters.Arg("label", engine.LabelBridge+"=1")),
	})
	if err != nil {
		return nil, fmt.Errorf("listing volumes: %w", err)
	}
	out := make([]lifecycle.LabelledVolume, 0, len(list.Volumes))
	for _, v := range list.Volumes {
		if v != nil {
			out = append(out, lifecycle.LabelledVolume{Name: v.Name, Labels: v.Labels})
		}
	}
	return out, nil
}

// RemoveLabelledVolume implements lifecycle.VolumeAPI.
func (d *Docker) RemoveLabelledVolume(ctx context.Context, name string) error {
	err := d.api.VolumeRemove(ctx, name, false)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// ConnFailed implements lifecycle.API.
func (d *Docker) ConnFailed(err error) bool { return client.IsErrConnectionFailed(err) }

// EnsureImage implements engine.ImageEnsurer.
func (d *Docker) EnsureImage(ctx context.Context, ref string) error {
	return d.e.EnsureImage(ctx, ref)
}

// HasImage implements lifecycle.API and engine.Describer.
func (d *Docker) HasImage(ctx context.Context, ref string) (bool, error) {
	_, err := d.api.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// PullImage implements lifecycle.API and engine.Describer: it pulls
// the image ref, as Start does when it is missing.
func (d *Docker) PullImage(ctx context.Context, ref string) error {
	rc, err := d.api.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	return d.followPull(ctx, ref, rc)
}

// followPull logs the progress messages of an image pull, each distinct
// status once per layer, reports the layers and bytes to ctx's
// PullWatcher, if any, and returns the pull's error, if any.
func (d *Docker) followPull(ctx context.Context, ref string, r io.Reader) error {
	dec := json.NewDecoder(io.LimitReader(r, 64<<20))
	seen := map[string]bool{}
	watch := engine.PullWatcherOf(ctx)
	tally := engine.NewLayerTally(ref)
	for {
		var m struct {
			ID             string `json:"id"`
			Status         string `json:"status"`
			ProgressDetail struct {
				Current int64 `json:"current"`
				Total   int64 `json:"total"`
			} `json:"progressDetail"`
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
		if key := m.ID + "\x00" + m.Status; len(seen) < 4096 && !seen[key] {
			seen[key] = true
			d.e.Log.Info("pull progress", "image", ref, "layer", m.ID, "status", m.Status)
		}
		if watch != nil && tallyLayer(tally, m.ID, m.Status, m.ProgressDetail.Current, m.ProgressDetail.Total) {
			watch(tally.Progress())
		}
	}
}

// tallyLayer adds one of the daemon's pull messages to t and reports
// whether it was about a layer. The daemon names a layer by its short ID
// in "Pulling fs layer", "Waiting", "Downloading" (with bytes), "Download
// complete", "Extracting", "Pull complete" and "Already exists"; its
// other messages ("Pulling from …", "Digest: …") are not a layer's.
func tallyLayer(t *engine.LayerTally, id, status string, current, total int64) bool {
	if id == "" {
		return false
	}
	switch status {
	case "Pulling fs layer", "Waiting", "Verifying Checksum", "Extracting":
		t.Seen(id)
	case "Downloading":
		t.Bytes(id, current, total)
	case "Download complete":
		t.Seen(id)
	case "Pull complete", "Already exists":
		t.Done(id)
	default:
		return false
	}
	return true
}

// Create implements lifecycle.API.
func (d *Docker) Create(ctx context.Context, spec engine.Spec, o lifecycle.Owner, name string) (string, error) {
	cfg, host := dockerConfig(spec, o)
	created, err := d.api.ContainerCreate(ctx, cfg, host, nil, nil, name)
	return created.ID, err
}

// Verify implements lifecycle.API: the daemon creates what it is asked for
// or fails.
func (d *Docker) Verify(context.Context, string, engine.Spec) error { return nil }

// Ops implements lifecycle.API.
func (d *Docker) Ops(id string) lifecycle.Ops { return &dockerContainer{api: d.api, id: id} }

// Stop implements lifecycle.API.
func (d *Docker) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int(grace.Seconds() + 0.999)
	err := d.api.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// Remove implements lifecycle.API.
func (d *Docker) Remove(ctx context.Context, id string) error {
	err := d.api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}
