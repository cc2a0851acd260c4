//go:build remote

package podman

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"github.com/containers/podman/v5/pkg/copy"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

func TestCheckPodmanStat(t *testing.T) {
	const (
		dir  = "/workspace/out"
		file = "/workspace/out/a.txt"
	)
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
	const (
		ok = iota
		notRegular
		other
	)
	for _, tt := range []struct {
		name string
		p    string
		want fs.FileMode
		h    *http.Header
		res  int
	}{
		{"directory", dir, fs.ModeDir, header(&copy.FileInfo{Name: "out", Mode: fs.ModeDir | 0o1777, IsDir: true, LinkTarget: dir}), ok},
		{"directory, no link target", dir, fs.ModeDir, header(&copy.FileInfo{Name: "out", Mode: fs.ModeDir | 0o700, IsDir: true}), ok},
		{"directory, IsDir alone", dir, fs.ModeDir, header(&copy.FileInfo{Name: "out", Mode: 0o700, IsDir: true}), ok},
		{"link to a directory", dir, fs.ModeDir, header(&copy.FileInfo{Name: "etc", Mode: fs.ModeSymlink | 0o777, LinkTarget: "/etc"}), notRegular},
		{"directory resolved elsewhere", dir, fs.ModeDir, header(&copy.FileInfo{Name: "etc", Mode: fs.ModeDir | 0o755, IsDir: true, LinkTarget: "/etc"}), notRegular},
		{"file for a directory", dir, fs.ModeDir, header(&copy.FileInfo{Name: "out", Mode: 0o644, LinkTarget: dir}), other},
		{"device for a directory", dir, fs.ModeDir, header(&copy.FileInfo{Name: "out", Mode: fs.ModeDevice | fs.ModeCharDevice | 0o666, LinkTarget: dir}), other},
		{"file", file, 0, header(&copy.FileInfo{Name: "a.txt", Mode: 0o644, LinkTarget: file}), ok},
		{"file, no link target", file, 0, header(&copy.FileInfo{Name: "a.txt", Mode: 0o644}), ok},
		{"link to a file", file, 0, header(&copy.FileInfo{Name: "passwd", Mode: fs.ModeSymlink | 0o777, LinkTarget: "/etc/passwd"}), notRegular},
		{"file resolved elsewhere", file, 0, header(&copy.FileInfo{Name: "passwd", Mode: 0o644, LinkTarget: "/etc/passwd"}), notRegular},
		{"directory for a file", file, 0, header(&copy.FileInfo{Name: "a.txt", Mode: fs.ModeDir | 0o755, IsDir: true, LinkTarget: file}), notRegular},
		{"device for a file", file, 0, header(&copy.FileInfo{Name: "a.txt", Mode: fs.ModeDevice | fs.ModeCharDevice | 0o666, LinkTarget: file}), notRegular},
		{"no stat", dir, fs.ModeDir, header(nil), other},
	} {
		err := checkPodmanStat(tt.h, tt.p, tt.want)
		switch {
		case (tt.res == ok) != (err == nil):
			t.Errorf("%s: %v", tt.name, err)
		case tt.res == notRegular && !errors.Is(err, engine.ErrNotRegular):
			t.Errorf("%s: %v, want ErrNotRegular", tt.name, err)
		case tt.res == other && (errors.Is(err, engine.ErrNotRegular) || !strings.Contains(err.Error(), tt.p)):
			t.Errorf("%s: %v, want an error naming %s, not ErrNotRegular", tt.name, err, tt.p)
		}
	}
	bad := http.Header{}
	bad.Set(copy.XDockerContainerPathStatHeader, "%%%")
	if err := checkPodmanStat(&bad, dir, fs.ModeDir); err == nil {
		t.Error("a garbled stat passed")
	}
}
