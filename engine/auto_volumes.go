package engine

import (
	"context"
	"fmt"
)

var (
	_ Volumes  = (*Auto)(nil)
	_ ImageIDs = (*Auto)(nil)
)

// volumes returns the connected backend's Volumes.
func (a *Auto) volumes(ctx context.Context) (Volumes, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return nil, err
	}
	v, ok := b.(Volumes)
	if _, kube := b.(*Kubernetes); kube && !ok {
		return nil, errKubeVolumes
	}
	if !ok {
		return nil, fmt.Errorf("%s keeps no named volumes", b.Name())
	}
	return v, nil
}

// CreateVolume implements Volumes with the connected backend.
func (a *Auto) CreateVolume(ctx context.Context, name string, labels map[string]string) error {
	v, err := a.volumes(ctx)
	if err != nil {
		return err
	}
	return v.CreateVolume(ctx, name, labels)
}

// Volume implements Volumes with the connected backend.
func (a *Auto) Volume(ctx context.Context, name string) (VolumeInfo, error) {
	v, err := a.volumes(ctx)
	if err != nil {
		return VolumeInfo{}, err
	}
	return v.Volume(ctx, name)
}

// VolumesLabelled implements Volumes with the connected backend.
func (a *Auto) VolumesLabelled(ctx context.Context, label string) ([]VolumeInfo, error) {
	v, err := a.volumes(ctx)
	if err != nil {
		return nil, err
	}
	return v.VolumesLabelled(ctx, label)
}

// RemoveVolume implements Volumes with the connected backend.
func (a *Auto) RemoveVolume(ctx context.Context, name string) error {
	v, err := a.volumes(ctx)
	if err != nil {
		return err
	}
	return v.RemoveVolume(ctx, name)
}

// ImageID implements ImageIDs with the connected backend.
func (a *Auto) ImageID(ctx context.Context, ref string) (string, error) {
	b, err := a.backend(ctx)
	if err != nil {
		return "", err
	}
	ids, ok := b.(ImageIDs)
	if !ok {
		return "", fmt.Errorf("%s cannot name an image's ID", b.Name())
	}
	return ids.ImageID(ctx, ref)
}
