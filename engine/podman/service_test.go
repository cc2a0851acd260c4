//go:build remote

package podman

import (
	"slices"
	"testing"
)

func TestPodmanSocketCandidates(t *testing.T) {
	tests := []struct {
		env  map[string]string
		uid  int
		want []string
	}{
		{map[string]string{"CONTAINER_HOST": "tcp://h:8080"}, 0, []string{"tcp://h:8080"}},
		{nil, 0, []string{"unix:///run/podman/podman.sock"}},
		{map[string]string{"XDG_RUNTIME_DIR": "/run/user/0"}, 0, []string{"unix:///run/podman/podman.sock", "unix:///run/user/0/podman/podman.sock"}},
		{map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, 1000, []string{"unix:///run/user/1000/podman/podman.sock"}},
		{nil, 1000, []string{"unix:///run/user/1000/podman/podman.sock"}},
	}
	for _, tt := range tests {
		if got := podmanSocketCandidates(envOf(tt.env), tt.uid); !slices.Equal(got, tt.want) {
			t.Errorf("env %v uid %d: got %v, want %v", tt.env, tt.uid, got, tt.want)
		}
	}
}

func TestUnixSocketAnswers(t *testing.T) {
	if unixSocketAnswers("unix:///nonexistent/podman.sock") {
		t.Fatal("a missing socket answers")
	}
}

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}
