package engine

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseEndpoints(t *testing.T) {
	certs := t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(certs, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	partial := t.TempDir()
	os.WriteFile(filepath.Join(partial, "ca.pem"), nil, 0o600)

	for _, tc := range []struct {
		in      string
		want    []Endpoint
		wantErr string
	}{
		{in: "docker", want: []Endpoint{{Backend: "docker"}}},
		{in: " docker , podman ", want: []Endpoint{{Backend: "docker"}, {Backend: "podman"}}},
		{in: "Docker=unix:///var/run/docker.sock\npodman=unix:///run/podman/podman.sock",
			want: []Endpoint{{Backend: "docker", Address: "unix:///var/run/docker.sock"},
				{Backend: "podman", Address: "unix:///run/podman/podman.sock"}}},
		{in: "docker,docker=tcp://127.0.0.1:2376?certs=" + certs,
			want: []Endpoint{{Backend: "docker"}, {Backend: "docker", Address: "tcp://127.0.0.1:2376", CertPath: certs}}},
		{in: "podman=tcp://10.0.0.5:8080", want: []Endpoint{{Backend: "podman", Address: "tcp://10.0.0.5:8080"}}},
		{in: "docker=ssh://me@host", want: []Endpoint{{Backend: "docker", Address: "ssh://me@host"}}},
		{in: "docker@colima, Docker@prod-tls podman@machine-default",
			want: []Endpoint{{Backend: "docker", Context: "colima"}, {Backend: "docker", Context: "prod-tls"},
				{Backend: "podman", Context: "machine-default"}}},
		{in: "docker,docker@default,docker=unix:///var/run/docker.sock,docker@my_ctx.v2+x",
			want: []Endpoint{{Backend: "docker"}, {Backend: "docker", Context: "default"},
				{Backend: "docker", Address: "unix:///var/run/docker.sock"}, {Backend: "docker", Context: "my_ctx.v2+x"}}},
		{in: "docker@ab,podman@ab", want: []Endpoint{{Backend: "docker", Context: "ab"}, {Backend: "podman", Context: "ab"}}},
		{in: "docker@Prod,docker@prod", want: []Endpoint{{Backend: "docker", Context: "Prod"}, {Backend: "docker", Context: "prod"}}},

		{in: "", wantErr: "lists no engine"},
		{in: " , ,", wantErr: "lists no engine"},
		{in: "dockr", wantErr: `engine 1 ("dockr"): unknown backend "dockr"`},
		{in: "docker,kubernetes=tcp://x:1", wantErr: `engine 2 ("kubernetes=tcp://x:1"): kubernetes takes no address`},
		{in: "kubernetes@", wantErr: "empty kubeconfig context name"},
		{in: "kubernetes,Kubernetes@arn:aws:eks:us-east-1:1:cluster/x=y,docker",
			want: []Endpoint{{Backend: "kubernetes"}, {Backend: "kubernetes", Context: "arn:aws:eks:us-east-1:1:cluster/x=y"}, {Backend: "docker"}}},
		{in: "docker=", wantErr: "empty address"},
		{in: "docker=/var/run/docker.sock", wantErr: "want a unix://, tcp:// or ssh:// URL"},
		{in: "docker=http://h:1", wantErr: "want a unix://, tcp:// or ssh:// URL"},
		{in: "docker=tcp://host", wantErr: "want tcp://HOST:PORT"},
		{in: "docker=tcp://host:", wantErr: "want tcp://HOST:PORT"},
		{in: "docker=unix://", wantErr: "no socket path"},
		{in: "docker=ssh://", wantErr: "no host"},
		{in: "docker=tcp://h:1?tls=1", wantErr: `unknown parameter "tls"`},
		{in: "docker=%zz", wantErr: "not a URL"},
		{in: "docker=tcp://h:1?certs=" + partial, wantErr: "cert.pem"},
		{in: "docker=tcp://h:1?certs=/nonexistent/dir", wantErr: "certs directory /nonexistent/dir"},
		{in: "podman=tcp://h:1?certs=" + certs, wantErr: "docker tcp:// address only"},
		{in: "docker=unix:///x.sock?certs=" + certs, wantErr: "docker tcp:// address only"},
		{in: "docker,docker", wantErr: `engine 2 ("docker"): the same engine as engine 1`},
		{in: "docker=tcp://h:1,docker=tcp://h:1", wantErr: "the same engine as engine 1"},
		{in: strings.Repeat("docker=tcp://h:1,", 65), wantErr: "at most 64"},
		{in: "docker@", wantErr: `engine 1 ("docker@"): empty docker context name after "@"`},
		{in: "podman@", wantErr: "empty podman connection name"},
		{in: "docker@=tcp://h:1", wantErr: "empty docker context name"},
		{in: "dockr@colima", wantErr: `unknown backend "dockr"`},
		{in: "@colima", wantErr: `unknown backend ""`},
		{in: "docker@-x", wantErr: `docker context name "-x": want a letter or digit`},
		{in: "docker@x", wantErr: `docker context name "x"`},
		{in: "docker@a/b", wantErr: `docker context name "a/b"`},
		{in: "docker@tcp://h:1", wantErr: `docker context name "tcp://h:1"`},
		{in: "podman@my@conn", wantErr: `podman connection name "my@conn"`},
		{in: "docker@colima=unix:///x.sock", wantErr: `docker context "colima" and address "unix:///x.sock": a context names its own address`},
		{in: "podman@machine=tcp://h:1", wantErr: "a context names its own address"},
		{in: "docker@colima, docker@colima", wantErr: `engine 2 ("docker@colima"): the same engine as engine 1`},
		{in: "docker@ab,podman,Docker@ab", wantErr: `engine 3 ("Docker@ab"): the same engine as engine 1`},
	} {
		got, err := ParseEndpoints(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseEndpoints(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseEndpoints(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseEndpoints(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestEndpointName(t *testing.T) {
	if n := (Endpoint{Backend: "podman"}).Name(); n != "podman" {
		t.Errorf("Name %q", n)
	}
	if n := (Endpoint{Backend: "docker", Address: "tcp://h:1", CertPath: "/x"}).Name(); n != "docker@tcp://h:1" {
		t.Errorf("Name %q", n)
	}
	if n := (Endpoint{Backend: "docker", Context: "colima"}).Name(); n != "docker@colima" {
		t.Errorf("Name %q", n)
	}
	if n := (Endpoint{Backend: "podman", Context: "machine-default"}).Name(); n != "podman@machine-default" {
		t.Errorf("Name %q", n)
	}
}

// FuzzParseEndpoints checks that no input panics and that every list
// parsed names only known backends, each with an address or a context
// (well named), not both, and no two of the same name.
func FuzzParseEndpoints(f *testing.F) {
	for _, s := range []string{"docker", "docker,podman=unix:///run/x.sock", "docker=tcp://h:1?certs=/x", "=", "docker=tcp://[::1]:2",
		"docker@colima,podman@machine-default", "docker@x=unix:///y", "podman@", "docker@a@b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		eps, err := ParseEndpoints(s)
		if err != nil {
			return
		}
		names := map[string]bool{}
		for _, ep := range eps {
			if ep.Backend != BackendDocker && ep.Backend != BackendPodman {
				t.Fatalf("parsed backend %q", ep.Backend)
			}
			if ep.Context != "" && (ep.Address != "" || ep.CertPath != "" || !contextNameRE.MatchString(ep.Context)) {
				t.Fatalf("parsed %+v", ep)
			}
			if names[ep.Name()] {
				t.Fatalf("parsed %q twice", ep.Name())
			}
			names[ep.Name()] = true
		}
	})
}
