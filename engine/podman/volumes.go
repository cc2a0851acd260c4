//go:build remote

package podman

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"github.com/containers/podman/v5/pkg/bindings/images"
	"github.com/containers/podman/v5/pkg/bindings/volumes"
	"github.com/containers/podman/v5/pkg/domain/entities"
	"github.com/containers/podman/v5/pkg/errorhandling"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

var _ engine.Volumes = (*Podman)(nil)

// CreateVolume implements Volumes. A service that refuses an existing
// name (one older than ignoreIfExist) is answered as the others are.
func (p *Podman) CreateVolume(ctx context.Context, name string, labels map[string]string) error {
	_, err := volumes.Create(p.ctx(ctx), entities.VolumeCreateOptions{Name: name, Driver: "local", Labels: labels, Label: labels, IgnoreIfExists: true}, nil)
	if err != nil && !podmanConflict(err) && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("creating volume %s: %w", name, err)
	}
	return nil
}

// Volume implements Volumes.
func (p *Podman) Volume(ctx context.Context, name string) (engine.VolumeInfo, error) {
	v, err := volumes.Inspect(p.ctx(ctx), name, nil)
	if podmanNotFound(err) {
		return engine.VolumeInfo{}, fmt.Errorf("volume %s: %w", name, fs.ErrNotExist)
	}
	if err != nil {
		return engine.VolumeInfo{}, fmt.Errorf("inspecting volume %s: %w", name, err)
	}
	return engine.VolumeInfo{Name: v.Name, Labels: v.Labels, Created: v.CreatedAt}, nil
}

// VolumesLabelled implements Volumes.
func (p *Podman) VolumesLabelled(ctx context.Context, label string) ([]engine.VolumeInfo, error) {
	list, err := volumes.List(p.ctx(ctx), new(volumes.ListOptions).WithFilters(map[string][]string{"label": {label}}))
	if err != nil {
		return nil, fmt.Errorf("listing volumes: %w", err)
	}
	out := make([]engine.VolumeInfo, 0, len(list))
	for _, v := range list {
		if v != nil {
			out = append(out, engine.VolumeInfo{Name: v.Name, Labels: v.Labels, Created: v.CreatedAt})
		}
	}
	return out, nil
}

// RemoveVolume implements Volumes.
func (p *Podman) RemoveVolume(ctx context.Context, name string) error {
	err := volumes.Remove(p.ctx(ctx), name, nil)
	switch {
	case err == nil, podmanNotFound(err):
		return nil
	case podmanConflict(err):
		return fmt.Errorf("removing volume %s: %w", name, engine.ErrVolumeInUse)
	}
	return fmt.Errorf("removing volume %s: %w", name, err)
}

// podmanConflict reports whether err is the service's 409 (in use,
// exists).
func podmanConflict(err error) bool {
	var em *errorhandling.ErrorModel
	return errors.As(err, &em) && em.Code() == http.StatusConflict
}

var _ engine.ImageIDs = (*Podman)(nil)

// ImageID implements ImageIDs.
func (p *Podman) ImageID(ctx context.Context, ref string) (string, error) {
	img, err := images.GetImage(p.ctx(ctx), ref, nil)
	if podmanNotFound(err) {
		return "", fmt.Errorf("image %s: %w", ref, fs.ErrNotExist)
	}
	if err != nil {
		return "", fmt.Errorf("inspecting image %s: %w", ref, err)
	}
	return img.ID, nil
}
