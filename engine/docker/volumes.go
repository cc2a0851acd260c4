package docker

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

var _ engine.Volumes = (*Docker)(nil)

// CreateVolume implements Volumes. The daemon answers a create of an
// existing name with that volume.
func (d *Docker) CreateVolume(ctx context.Context, name string, labels map[string]string) error {
	if _, err := d.api.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: labels}); err != nil {
		return fmt.Errorf("creating volume %s: %w", name, err)
	}
	return nil
}

// Volume implements Volumes.
func (d *Docker) Volume(ctx context.Context, name string) (engine.VolumeInfo, error) {
	v, err := d.api.VolumeInspect(ctx, name)
	if cerrdefs.IsNotFound(err) {
		return engine.VolumeInfo{}, fmt.Errorf("volume %s: %w", name, fs.ErrNotExist)
	}
	if err != nil {
		return engine.VolumeInfo{}, fmt.Errorf("inspecting volume %s: %w", name, err)
	}
	return dockerVolumeInfo(&v), nil
}

// VolumesLabelled implements Volumes.
func (d *Docker) VolumesLabelled(ctx context.Context, label string) ([]engine.VolumeInfo, error) {
	list, err := d.api.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, fmt.Errorf("listing volumes: %w", err)
	}
	out := make([]engine.VolumeInfo, 0, len(list.Volumes))
	for _, v := range list.Volumes {
		if v != nil {
			out = append(out, dockerVolumeInfo(v))
		}
	}
	return out, nil
}

// RemoveVolume implements Volumes.
func (d *Docker) RemoveVolume(ctx context.Context, name string) error {
	err := d.api.VolumeRemove(ctx, name, false)
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsConflict(err):
		return fmt.Errorf("removing volume %s: %w", name, engine.ErrVolumeInUse)
	}
	return fmt.Errorf("removing volume %s: %w", name, err)
}

func dockerVolumeInfo(v *volume.Volume) engine.VolumeInfo {
	created, _ := time.Parse(time.RFC3339, v.CreatedAt)
	return engine.VolumeInfo{Name: v.Name, Labels: v.Labels, Created: created}
}

var _ engine.ImageIDs = (*Docker)(nil)

// ImageID implements ImageIDs.
func (d *Docker) ImageID(ctx context.Context, ref string) (string, error) {
	img, err := d.api.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("image %s: %w", ref, fs.ErrNotExist)
	}
	if err != nil {
		return "", fmt.Errorf("inspecting image %s: %w", ref, err)
	}
	return img.ID, nil
}
