package docker

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/volume"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine/internal/lifecycle"
)

// TestDockerRemovesOrphanedVolumes checks that the file-exchange volumes
// of dead bridge processes of this host are removed at connect, and
// theirs only; a failure is logged.
func TestDockerRemovesOrphanedVolumes(t *testing.T) {
	me := lifecycle.CurrentOwner()
	dead := strconv.Itoa(1<<22 + 7) // above pid_max: never a live process
	labels := func(host, pid string) map[string]string {
		return map[string]string{engine.LabelBridge: "1", engine.LabelHost: host, engine.LabelPID: pid, engine.LabelPIDStart: "1"}
	}
	f := newFakeDocker(t)
	f.volumes = []*volume.Volume{
		{Name: "orphan1", Labels: labels(me.Host, dead)},
		{Name: "busy", Labels: labels(me.Host, dead)},
		{Name: "mine", Labels: map[string]string{engine.LabelBridge: "1", engine.LabelHost: me.Host, engine.LabelPID: strconv.Itoa(me.PID), engine.LabelPIDStart: me.Start}},
		{Name: "elsewhere", Labels: labels("another-host", dead)},
	}
	f.fail = func(method, id string) error {
		if method == "VolumeRemove" && id == "busy" {
			return errors.New("volume is in use")
		}
		return nil
	}
	var logs logBuffer
	newTestDocker(t, f, &logs)
	var removed []string
	for _, c := range f.Calls() {
		if name, ok := strings.CutPrefix(c, "VolumeRemove "); ok {
			removed = append(removed, name)
		}
	}
	if !slices.Equal(removed, []string{"orphan1", "busy"}) {
		t.Fatalf("removed %v, want the dead process's volumes", removed)
	}
	if !strings.Contains(logs.String(), "removing orphaned volume") || !strings.Contains(logs.String(), "removed orphaned sandbox volumes") {
		t.Fatalf("log does not report the removal and its failure:\n%s", logs.String())
	}
	if got := f.volumeOpts[0].Filters.Get("label"); !slices.Equal(got, []string{engine.LabelBridge + "=1"}) {
		t.Fatalf("volume list filters %v: want the bridge's label", got)
	}
}

func TestDockerVolumeListFails(t *testing.T) {
	f := newFakeDocker(t)
	f.fail = func(method, _ string) error {
		if method == "VolumeList" {
			return errors.New("busy")
		}
		return nil
	}
	var logs logBuffer
	d := newTestDocker(t, f, &logs)
	if !strings.Contains(logs.String(), "listing volumes: busy") {
		t.Fatalf("a failed volume clean-up is not logged:\n%s", logs.String())
	}
	mustStart(t, d) // and the engine serves
}
