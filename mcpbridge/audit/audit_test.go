package audit

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestAuditLinesAndRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := Open(path, &Options{MaxBytes: 4096, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				a.write(map[string]any{"event": "tool_call", "writer": w, "i": i, "pad": strings.Repeat("x", 100)})
			}
		})
	}
	wg.Wait()
	a.Close()
	files, _ := filepath.Glob(path + "*")
	if len(files) != 3 { // audit.jsonl, .1, .2: older ones dropped
		t.Fatalf("files %v, want the log and 2 rotated", files)
	}
	lines := 0
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if fi, _ := os.Stat(f); fi.Size() > 4096 {
			t.Errorf("%s is %d bytes, past MaxBytes", f, fi.Size())
		}
		if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", f, fi.Mode().Perm())
		}
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var rec map[string]any
			if err := json.Unmarshal(line, &rec); err != nil || rec["event"] != "tool_call" || rec["time"] == nil {
				t.Fatalf("%s: line %q: %v", f, line, err)
			}
			lines++
		}
	}
	if lines == 0 || lines > 400 {
		t.Fatalf("%d lines", lines)
	}
}

func TestAuditBadPaths(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir, nil); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "no", "such", "dir", "a.jsonl"), nil); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing directory: %v", err)
	}
	// A read-only file that opens for root but refuses every write: the
	// records are counted lost and the writer goes on.
	if a, err := Open("/proc/version", nil); err == nil {
		a.write(map[string]any{"event": "run_python"})
		if a.dropped != 1 {
			t.Errorf("/proc/version: %d records lost, want 1", a.dropped)
		}
		a.Close()
	}
	if os.Geteuid() != 0 { // root writes anyway
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o500)
		if _, err := Open(filepath.Join(ro, "a.jsonl"), nil); err == nil {
			t.Error("a read-only directory: no error")
		}
	}
}

func TestAuditFullDiskNeverFails(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	var logs bytes.Buffer
	a, err := Open("/dev/full", &Options{MaxBytes: 4096, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for range 100 {
		a.write(map[string]any{"event": "run_python", "pad": strings.Repeat("x", 200)})
	}
	if a.dropped != 100 {
		t.Errorf("%d records counted lost, want 100", a.dropped)
	}
	if n := strings.Count(logs.String(), "audit records are being lost"); n != 1 || !strings.Contains(logs.String(), "no space left on device") {
		t.Errorf("warnings (%d): %s", n, logs.String())
	}
	if _, err := os.Stat("/dev/full.1"); err == nil {
		t.Error("a device was rotated")
	}
}
