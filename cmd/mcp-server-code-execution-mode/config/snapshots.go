package config

import (
	"fmt"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge"
)

// Defaults of the snapshot settings.
const (
	defaultSnapshotTTL = 24 * time.Hour
	defaultMaxForks    = 4
)

// snapshots reads MCP_BRIDGE_SNAPSHOTS and the settings that go with it
// into b: sessions that sleep, wake and fork (engine.Snapshotter). They
// need gVisor; a sandbox with a fast lane (a host socket) cannot be
// checkpointed, nor one with an input directory (a volume of the host).
func (r *reader) snapshots(b *mcpbridge.Options, fastLane, inputDir bool) {
	maxBytes := r.size(EnvSnapshotMax, 1<<20, 1<<40, "want a size of at least 1m, such as 2g")
	ttl := r.seconds(EnvSnapshotTTL, 60, 365*24*3600, "want whole seconds from 60, such as 86400")
	forks := int(r.integer(EnvMaxForks, 1, 16, "want a whole number from 1 to 16"))
	if !r.flag(EnvSnapshots) {
		return
	}
	if rt := b.Session.Spec.OCIRuntime; !engine.IsGVisor(rt) {
		r.errs = append(r.errs, fmt.Errorf("%s=1 needs gVisor, whose checkpoints are the ones that work: set %s=runsc (it is %q)",
			EnvSnapshots, EnvOCIRuntime, rt))
	}
	if fastLane {
		r.errs = append(r.errs, fmt.Errorf("%s and %s are both set: a sandbox's fast lane is a socket of the host, which a checkpoint cannot hold; set one",
			EnvSnapshots, EnvFastLane))
	}
	if inputDir {
		r.errs = append(r.errs, fmt.Errorf("%s and %s are both set: the input directory is a volume of the engine's host, which a sleeping sandbox's container loses when it stops; set one",
			EnvSnapshots, EnvInputDir))
	}
	if ttl == 0 {
		ttl = defaultSnapshotTTL
	}
	if forks == 0 {
		forks = defaultMaxForks
	}
	b.Session.Sleep = &entrypoint.SleepOptions{MaxBytes: maxBytes}
	b.Session.Spec.SleepTTL = ttl
	b.MaxForks = forks
}
