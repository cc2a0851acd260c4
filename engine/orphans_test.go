package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/volume"
)

// TestLeftoversRetried records containers whose removal failed and checks
// that a retry forgets those removed or gone and keeps those still failing.
func TestLeftoversRetried(t *testing.T) {
	var l leftovers
	calls := map[string]int{}
	failing := map[string]bool{"b": true}
	remove := func(_ context.Context, id string) error {
		calls[id]++
		if failing[id] {
			return errors.New("connection refused")
		}
		return nil
	}
	log := slog.New(slog.DiscardHandler)
	l.retry(context.Background(), log, "test", remove)
	if len(calls) != 0 {
		t.Fatalf("a retry with nothing recorded removed %v", calls)
	}
	l.add("a")
	l.add("b")
	l.add("a")
	if l.len() != 2 {
		t.Fatalf("%d recorded, want 2", l.len())
	}
	l.retry(context.Background(), log, "test", remove)
	if l.len() != 1 || calls["a"] != 1 || calls["b"] != 1 {
		t.Fatalf("after one retry: %d left, calls %v; want b left, each tried once", l.len(), calls)
	}
	failing["b"] = false
	l.retry(context.Background(), log, "test", remove)
	if l.len() != 0 || calls["a"] != 1 || calls["b"] != 2 {
		t.Fatalf("after the engine is back: %d left, calls %v", l.len(), calls)
	}
}

func TestDialFailed(t *testing.T) {
	_, dialErr := net.Dial("unix", t.TempDir()+"/no.sock")
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{dialErr, true},
		{fmt.Errorf("creating container: %w", &url.Error{Op: "Post", URL: "http://d/v5/libpod/containers/create", Err: dialErr}), true},
		{&net.OpError{Op: "read", Net: "unix", Err: errors.New("connection reset by peer")}, false},
		{errors.New("no such image"), false},
		{nil, false},
	} {
		if got := dialFailed(tt.err); got != tt.want {
			t.Errorf("dialFailed(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestDockerRemovesOrphanedVolumes checks that the file-exchange volumes
// of dead bridge processes of this host are removed at connect, and
// theirs only; a failure is logged.
func TestDockerRemovesOrphanedVolumes(t *testing.T) {
	me := currentOwner()
	dead := strconv.Itoa(1<<22 + 7) // above pid_max: never a live process
	labels := func(host, pid string) map[string]string {
		return map[string]string{LabelBridge: "1", LabelHost: host, LabelPID: pid, LabelPIDStart: "1"}
	}
	f := newFakeDocker(t)
	f.volumes = []*volume.Volume{
		{Name: "orphan1", Labels: labels(me.Host, dead)},
		{Name: "busy", Labels: labels(me.Host, dead)},
		{Name: "mine", Labels: map[string]string{LabelBridge: "1", LabelHost: me.Host, LabelPID: strconv.Itoa(me.PID), LabelPIDStart: me.Start}},
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
	if got := f.volumeOpts[0].Filters.Get("label"); !slices.Equal(got, []string{LabelBridge + "=1"}) {
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
