//go:build remote

package engine

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"testing"

	"github.com/containers/podman/v5/pkg/copy"
)

func TestCheckPodmanStat(t *testing.T) {
	const p = "/workspace/out/a.txt"
	header := func(info *copy.FileInfo) *http.Header {
		h := http.Header{}
		if info != nil {
			b, err := json.Marshal(info)
			if err != nil {
				t.Fatal(err)
			}
			h.Set(copy.XDockerContainerPathStatHeader, base64.URLEncoding.EncodeToString(b))
		}
		return &h
	}
	for _, tt := range []struct {
		name string
		h    *http.Header
		ok   bool
	}{
		{"file", header(&copy.FileInfo{Name: "a.txt", Mode: 0o644, LinkTarget: p}), true},
		{"file, no link target", header(&copy.FileInfo{Name: "a.txt", Mode: 0o644}), true},
		{"link", header(&copy.FileInfo{Name: "passwd", Mode: os.ModeSymlink | 0o777, LinkTarget: "/etc/passwd"}), false},
		{"resolved elsewhere", header(&copy.FileInfo{Name: "passwd", Mode: 0o644, LinkTarget: "/etc/passwd"}), false},
		{"directory", header(&copy.FileInfo{Name: "a.txt", Mode: os.ModeDir | 0o755, IsDir: true, LinkTarget: p}), false},
		{"device", header(&copy.FileInfo{Name: "a.txt", Mode: os.ModeDevice | os.ModeCharDevice | 0o666, LinkTarget: p}), false},
		{"no stat", header(nil), false},
	} {
		err := checkPodmanStat(tt.h, p)
		if tt.ok != (err == nil) {
			t.Errorf("%s: %v", tt.name, err)
		}
		if !tt.ok && tt.name != "no stat" && !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s: %v, want ErrNotRegular", tt.name, err)
		}
	}
	bad := http.Header{}
	bad.Set(copy.XDockerContainerPathStatHeader, "%%%")
	if err := checkPodmanStat(&bad, p); err == nil {
		t.Error("a garbled stat passed")
	}
}
