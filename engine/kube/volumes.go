package kube

import (
	"context"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// The Kubernetes backend keeps no named volumes: it is an engine.Volumes
// only to say so, with errKubeVolumes, to a package set (MCP_BRIDGE_PACKAGES)
// that asks for one.

// CreateVolume implements engine.Volumes: it fails with errKubeVolumes.
func (k *Kubernetes) CreateVolume(context.Context, string, map[string]string) error {
	return errKubeVolumes
}

// Volume implements engine.Volumes: it fails with errKubeVolumes.
func (k *Kubernetes) Volume(context.Context, string) (engine.VolumeInfo, error) {
	return engine.VolumeInfo{}, errKubeVolumes
}

// VolumesLabelled implements engine.Volumes: it fails with errKubeVolumes.
func (k *Kubernetes) VolumesLabelled(context.Context, string) ([]engine.VolumeInfo, error) {
	return nil, errKubeVolumes
}

// RemoveVolume implements engine.Volumes: it fails with errKubeVolumes.
func (k *Kubernetes) RemoveVolume(context.Context, string) error {
	return errKubeVolumes
}

var _ engine.Volumes = (*Kubernetes)(nil)
