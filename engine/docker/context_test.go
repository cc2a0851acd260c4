package docker

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// A testDockerContext is a context as `docker context create` stores it.
type testDockerContext struct {
	name string
	host string
	skip bool              // SkipTLSVerify
	tls  map[string][]byte // ca.pem, cert.pem, key.pem
	meta string            // meta.json as is, instead of one made of the above
}

// contextDigest is the directory name the docker CLI stores context name
// under.
func contextDigest(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// writeDockerConfig lays out a docker CLI configuration directory in a
// temporary directory: config.json with currentContext (none when ""),
// and the contexts, as the CLI writes them.
func writeDockerConfig(t *testing.T, current string, contexts ...testDockerContext) string {
	t.Helper()
	dir := t.TempDir()
	if current != "" {
		writeFile(t, filepath.Join(dir, "config.json"),
			fmt.Sprintf(`{"auths": {"https://index.docker.io/v1/": {"auth": "dTpw"}}, "currentContext": %q}`, current))
	}
	for _, c := range contexts {
		meta := c.meta
		if meta == "" {
			b, err := json.Marshal(map[string]any{
				"Name":      c.name,
				"Metadata":  map[string]any{"Description": "made by the test"},
				"Endpoints": map[string]any{"docker": map[string]any{"Host": c.host, "SkipTLSVerify": c.skip}},
			})
			if err != nil {
				t.Fatal(err)
			}
			meta = string(b)
		}
		writeFile(t, filepath.Join(dir, "contexts", "meta", contextDigest(c.name), "meta.json"), meta)
		for f, data := range c.tls {
			writeFile(t, filepath.Join(dir, "contexts", "tls", contextDigest(c.name), "docker", f), string(data))
		}
	}
	return dir
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A testPKI is a CA, a server certificate it signed for 127.0.0.1, and
// a client certificate it signed, as the docker CLI stores it for a
// context: ca.pem, cert.pem, key.pem.
type testPKI struct {
	files  map[string][]byte
	server tls.Certificate
	pool   *x509.CertPool
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	sign := func(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) (*x509.Certificate, []byte) {
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if parent == nil { // self-signed
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	keyPEM := func(key *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	caKey, serverKey, clientKey := newKey(), newKey(), newKey()
	ca, caPEM := sign(&x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, nil, &caKey.PublicKey, caKey)
	_, serverPEM := sign(&x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "daemon"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, &serverKey.PublicKey, caKey)
	_, clientPEM := sign(&x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "client"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		ca, &clientKey.PublicKey, caKey)
	server, err := tls.X509KeyPair(serverPEM, keyPEM(serverKey))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return testPKI{
		files:  map[string][]byte{"ca.pem": caPEM, "cert.pem": clientPEM, "key.pem": keyPEM(clientKey)},
		server: server,
		pool:   pool,
	}
}

// fakeDaemon answers the requests New and Describe make as a
// Docker daemon with no container does; clientCerts counts the requests
// that came with a verified client certificate.
func fakeDaemon(clientCerts *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			clientCerts.Add(1)
		}
		w.Header().Set("API-Version", "1.47")
		w.Header().Set("Content-Type", "application/json")
		switch p := r.URL.Path; {
		case strings.HasSuffix(p, "/_ping"):
			fmt.Fprint(w, "OK")
		case strings.HasSuffix(p, "/containers/json"):
			fmt.Fprint(w, "[]")
		case strings.HasSuffix(p, "/volumes"):
			fmt.Fprint(w, `{"Volumes": []}`)
		case strings.HasSuffix(p, "/version"):
			fmt.Fprint(w, `{"Version": "28.5.2", "ApiVersion": "1.47"}`)
		case strings.HasSuffix(p, "/info"):
			fmt.Fprint(w, `{"DefaultRuntime": "runc"}`)
		default:
			http.NotFound(w, r)
		}
	})
}

func mapGetenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func TestResolveDockerEndpoint(t *testing.T) {
	tlsFiles := newTestPKI(t).files
	colima := testDockerContext{name: "colima", host: "unix:///home/u/.colima/default/docker.sock"}
	rootless := testDockerContext{name: "rootless", host: "unix:///run/user/1000/docker.sock"}
	remote := testDockerContext{name: "remote", host: "tcp://10.0.0.5:2376", tls: tlsFiles}
	insecure := testDockerContext{name: "insecure", host: "tcp://10.0.0.6:2376", skip: true}
	ssh := testDockerContext{name: "ssh", host: "ssh://me@build.example.com"}
	noHost := testDockerContext{name: "nohost"}
	malformed := testDockerContext{name: "broken", meta: `{"Name": "broken", "Endpoints": {"docker": {"Host": 5}}}`}
	noEndpoint := testDockerContext{name: "k8s", meta: `{"Name": "k8s", "Endpoints": {"kubernetes": {"Host": "https://k8s"}}}`}
	all := []testDockerContext{colima, rootless, remote, insecure, ssh, noHost, malformed, noEndpoint}
	withCurrent := writeDockerConfig(t, "rootless", all...)
	noCurrent := writeDockerConfig(t, "", all...)
	// A meta.json that cannot be read: a directory.
	if err := os.MkdirAll(filepath.Join(noCurrent, "contexts", "meta", contextDigest("unreadable"), "meta.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	missingCurrent := writeDockerConfig(t, "gone", all...)
	defaultCurrent := writeDockerConfig(t, "default", all...)
	badConfig := writeDockerConfig(t, "", all...)
	writeFile(t, filepath.Join(badConfig, "config.json"), `{"currentContext": `)
	home := t.TempDir()
	homeConfig := filepath.Join(home, ".docker")
	if err := os.Rename(writeDockerConfig(t, "colima", colima), homeConfig); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name    string
		opts    Options
		env     map[string]string
		host    string
		context string
		source  string
		stored  bool   // a stored context's endpoint is used
		tls     int    // TLS files of the stored context
		skip    bool   // SkipTLSVerify
		warning string // part of Warning
		err     string // the error, exactly when it starts with "=", else a part of it
	}{
		{name: "nothing set", env: map[string]string{"DOCKER_CONFIG": noCurrent},
			host: client.DefaultDockerHost, source: dockerSourceDefault},
		{name: "no config directory at all", env: map[string]string{"DOCKER_CONFIG": filepath.Join(t.TempDir(), "none")},
			host: client.DefaultDockerHost, source: dockerSourceDefault},
		{name: "option host beats everything",
			opts: Options{Host: "tcp://opt:2375"},
			env:  map[string]string{"DOCKER_CONFIG": withCurrent, "DOCKER_HOST": "tcp://env:2375", "DOCKER_CONTEXT": "colima"},
			host: "tcp://opt:2375", source: dockerSourceOption},
		{name: "DOCKER_HOST overrides DOCKER_CONTEXT and currentContext",
			env:  map[string]string{"DOCKER_CONFIG": withCurrent, "DOCKER_HOST": "tcp://env:2375", "DOCKER_CONTEXT": "colima"},
			host: "tcp://env:2375", source: dockerSourceHostEnv, warning: `DOCKER_HOST overrides DOCKER_CONTEXT="colima"`},
		{name: "DOCKER_HOST overrides currentContext",
			env:  map[string]string{"DOCKER_CONFIG": withCurrent, "DOCKER_HOST": "unix:///x.sock"},
			host: "unix:///x.sock", source: dockerSourceHostEnv},
		{name: "DOCKER_HOST overrides a missing context",
			env:  map[string]string{"DOCKER_CONFIG": withCurrent, "DOCKER_HOST": "unix:///x.sock", "DOCKER_CONTEXT": "gone"},
			host: "unix:///x.sock", source: dockerSourceHostEnv, warning: "gone"},
		{name: "DOCKER_CONTEXT unix socket",
			env:  map[string]string{"DOCKER_CONFIG": noCurrent, "DOCKER_CONTEXT": "colima"},
			host: colima.host, context: "colima", source: dockerSourceContextEnv, stored: true},
		{name: "DOCKER_CONTEXT overrides currentContext",
			env:  map[string]string{"DOCKER_CONFIG": withCurrent, "DOCKER_CONTEXT": "colima"},
			host: colima.host, context: "colima", source: dockerSourceContextEnv, stored: true},
		{name: "DOCKER_CONTEXT tcp with TLS",
			env:  map[string]string{"DOCKER_CONFIG": noCurrent, "DOCKER_CONTEXT": "remote"},
			host: remote.host, context: "remote", source: dockerSourceContextEnv, stored: true, tls: 3},
		{name: "DOCKER_CONTEXT tcp skipping TLS verification",
			env:  map[string]string{"DOCKER_CONFIG": noCurrent, "DOCKER_CONTEXT": "insecure"},
			host: insecure.host, context: "insecure", source: dockerSourceContextEnv, stored: true, skip: true},
		{name: "DOCKER_CONTEXT ssh",
			env:  map[string]string{"DOCKER_CONFIG": noCurrent, "DOCKER_CONTEXT": "ssh"},
			host: ssh.host, context: "ssh", source: dockerSourceContextEnv, stored: true},
		{name: "context without a host",
			env:  map[string]string{"DOCKER_CONFIG": noCurrent, "DOCKER_CONTEXT": "nohost"},
			host: client.DefaultDockerHost, context: "nohost", source: dockerSourceContextEnv, stored: true},
		{name: "currentContext",
			env:  map[string]string{"DOCKER_CONFIG": withCurrent},
			host: rootless.host, context: "rootless", source: dockerSourceConfig, stored: true},
		{name: "currentContext in the home directory",
			env:  map[string]string{"HOME": home, "USERPROFILE": home},
			host: colima.host, context: "colima", source: dockerSourceConfig, stored: true},
		{name: "DOCKER_CONTEXT default",
			env:  map[string]string{"DOCKER_CONFIG": withCurrent, "DOCKER_CONTEXT": "default"},
			host: client.DefaultDockerHost, context: "default", source: dockerSourceContextEnv},
		{name: "DOCKER_CONTEXT default with DOCKER_HOST: no warning",
			env:  map[string]string{"DOCKER_CONFIG": withCurrent, "DOCKER_CONTEXT": "default", "DOCKER_HOST": "tcp://env:2375"},
			host: "tcp://env:2375", source: dockerSourceHostEnv},
		{name: "currentContext default",
			env:  map[string]string{"DOCKER_CONFIG": defaultCurrent},
			host: client.DefaultDockerHost, context: "default", source: dockerSourceConfig},
		{name: "option context overrides DOCKER_HOST, as docker --context does",
			opts: Options{Context: "remote"},
			env:  map[string]string{"DOCKER_CONFIG": withCurrent, "DOCKER_HOST": "tcp://env:2375", "DOCKER_CONTEXT": "colima"},
			host: remote.host, context: "remote", source: dockerSourceOption, stored: true, tls: 3},
		{name: "option context default is DOCKER_HOST",
			opts: Options{Context: "default"},
			env:  map[string]string{"DOCKER_CONFIG": withCurrent, "DOCKER_HOST": "tcp://env:2375"},
			host: "tcp://env:2375", context: "default", source: dockerSourceOption},
		{name: "option host and context",
			opts: Options{Host: "tcp://opt:2375", Context: "remote"},
			env:  map[string]string{"DOCKER_CONFIG": withCurrent},
			err:  `=docker: both a host (tcp://opt:2375) and a context ("remote") are set; set one`},
		{name: "DOCKER_CONTEXT not found",
			env: map[string]string{"DOCKER_CONFIG": noCurrent, "DOCKER_CONTEXT": "gone"},
			err: fmt.Sprintf(`=docker context "gone": not found in %s (set by DOCKER_CONTEXT)`, filepath.Join(noCurrent, "contexts"))},
		{name: "option context not found",
			opts: Options{Context: "gone"},
			env:  map[string]string{"DOCKER_CONFIG": noCurrent},
			err:  fmt.Sprintf(`=docker context "gone": not found in %s (set by Options.Context)`, filepath.Join(noCurrent, "contexts"))},
		{name: "currentContext not found",
			env: map[string]string{"DOCKER_CONFIG": missingCurrent},
			err: fmt.Sprintf(`=docker context "gone": not found in %s (set by currentContext in %s)`,
				filepath.Join(missingCurrent, "contexts"), filepath.Join(missingCurrent, "config.json"))},
		{name: "malformed meta.json",
			env: map[string]string{"DOCKER_CONFIG": noCurrent, "DOCKER_CONTEXT": "broken"},
			err: fmt.Sprintf(`docker context "broken": parsing %s: json: cannot unmarshal number`,
				filepath.Join(noCurrent, "contexts", "meta", contextDigest("broken"), "meta.json"))},
		{name: "unreadable meta.json",
			env: map[string]string{"DOCKER_CONFIG": noCurrent, "DOCKER_CONTEXT": "unreadable"},
			err: fmt.Sprintf(`=docker context "unreadable": reading %s: is a directory (set by DOCKER_CONTEXT)`,
				filepath.Join(noCurrent, "contexts", "meta", contextDigest("unreadable"), "meta.json"))},
		{name: "meta.json without a docker endpoint",
			env: map[string]string{"DOCKER_CONFIG": noCurrent, "DOCKER_CONTEXT": "k8s"},
			err: fmt.Sprintf(`=docker context "k8s": %s has no docker endpoint (set by DOCKER_CONTEXT)`,
				filepath.Join(noCurrent, "contexts", "meta", contextDigest("k8s"), "meta.json"))},
		{name: "malformed config.json: the default, with a warning",
			env:  map[string]string{"DOCKER_CONFIG": badConfig},
			host: client.DefaultDockerHost, source: dockerSourceDefault, warning: filepath.Join(badConfig, "config.json")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			ep, err := resolveDockerEndpoint(&opts, mapGetenv(tt.env))
			if tt.err != "" {
				want, exact := strings.CutPrefix(tt.err, "=")
				if err == nil || (exact && err.Error() != want) || (!exact && !strings.Contains(err.Error(), want)) {
					t.Fatalf("err = %v; want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ep.Host != tt.host || ep.Context != tt.context || ep.Source != tt.source || (ep.stored != nil) != tt.stored {
				t.Errorf("got host %q, context %q, source %q, stored %v; want %q, %q, %q, %v",
					ep.Host, ep.Context, ep.Source, ep.stored != nil, tt.host, tt.context, tt.source, tt.stored)
			}
			if wantEnvTLS := !tt.stored && opts.Host == ""; ep.envTLS != wantEnvTLS {
				t.Errorf("envTLS = %v; want %v", ep.envTLS, wantEnvTLS)
			}
			if (tt.warning == "") != (ep.Warning == "") || !strings.Contains(ep.Warning, tt.warning) {
				t.Errorf("warning %q; want one with %q", ep.Warning, tt.warning)
			}
			if ep.stored == nil {
				return
			}
			n := 0
			if d := ep.stored.TLSData; d != nil {
				for _, b := range [][]byte{d.CA, d.Cert, d.Key} {
					if b != nil {
						n++
					}
				}
			}
			if n != tt.tls || ep.stored.SkipTLSVerify != tt.skip {
				t.Errorf("%d TLS files, SkipTLSVerify %v; want %d, %v", n, ep.stored.SkipTLSVerify, tt.tls, tt.skip)
			}
		})
	}
}

// TestDockerContextClientOpts makes clients from stored contexts: a
// context's TLS files verify a fake daemon and are the client
// certificate it verifies; SkipTLSVerify skips the daemon's
// verification; an ssh host goes through connhelper; errors name the
// context.
func TestDockerContextClientOpts(t *testing.T) {
	pki := newTestPKI(t)
	var clientCerts atomic.Int32
	srv := httptest.NewUnstartedServer(fakeDaemon(&clientCerts))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.pool,
		ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()
	daemon := "tcp://" + srv.Listener.Addr().String()

	badCA := map[string][]byte{"ca.pem": []byte("not a certificate")}
	dir := writeDockerConfig(t, "",
		testDockerContext{name: "remote", host: daemon, tls: pki.files},
		testDockerContext{name: "insecure", host: daemon, skip: true},
		testDockerContext{name: "untrusted", host: daemon, tls: map[string][]byte{"ca.pem": newTestPKI(t).files["ca.pem"]}},
		testDockerContext{name: "ssh", host: "ssh://me@build.example.com"},
		testDockerContext{name: "badssh", host: "ssh://"},
		testDockerContext{name: "badca", host: daemon, tls: badCA},
	)
	newClient := func(t *testing.T, name string) (*client.Client, error) {
		t.Helper()
		ep, err := resolveDockerEndpoint(&Options{Context: name}, mapGetenv(map[string]string{"DOCKER_CONFIG": dir}))
		if err != nil {
			t.Fatal(err)
		}
		copts, err := ep.clientOpts()
		if err != nil {
			return nil, err
		}
		c, err := client.NewClientWithOpts(copts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, nil
	}
	ping := func(t *testing.T, name string) error {
		t.Helper()
		c, err := newClient(t, name)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = c.Ping(ctx)
		return err
	}

	if err := ping(t, "remote"); err != nil || clientCerts.Load() != 1 {
		t.Errorf("remote: %v, %d requests with a client certificate; want 1", err, clientCerts.Load())
	}
	if err := ping(t, "insecure"); err != nil || clientCerts.Load() != 1 {
		t.Errorf("insecure: %v, %d requests with a client certificate; want 1", err, clientCerts.Load())
	}
	if err := ping(t, "untrusted"); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("untrusted: %v; want the daemon's certificate refused", err)
	}
	c, err := newClient(t, "ssh")
	if err != nil {
		t.Fatal(err)
	}
	if c.DaemonHost() != "http://docker.example.com" {
		t.Errorf("ssh: daemon host %q; want connhelper's", c.DaemonHost())
	}
	if _, err := newClient(t, "badssh"); err == nil ||
		!strings.Contains(err.Error(), `docker at ssh:// (context "badssh"): setting up ssh connection`) {
		t.Errorf("badssh: %v", err)
	}
	if _, err := newClient(t, "badca"); err == nil ||
		!strings.Contains(err.Error(), `(context "badca"): loading the context's TLS files`) ||
		!strings.Contains(err.Error(), "ca.pem") {
		t.Errorf("badca: %v", err)
	}
}

func TestDockerEndpoint(t *testing.T) {
	dir := writeDockerConfig(t, "colima", testDockerContext{name: "colima", host: "unix:///c.sock"})
	env := map[string]string{"DOCKER_CONFIG": dir}
	if addr, name, err := Endpoint("", "", mapGetenv(env)); addr != "unix:///c.sock" || name != "colima" || err != nil {
		t.Errorf("currentContext: %q, %q, %v", addr, name, err)
	}
	if addr, name, err := Endpoint("tcp://h:1", "", mapGetenv(env)); addr != "tcp://h:1" || name != "" || err != nil {
		t.Errorf("host: %q, %q, %v", addr, name, err)
	}
	env["DOCKER_CONTEXT"] = "gone"
	if _, _, err := Endpoint("", "", mapGetenv(env)); err == nil || !strings.Contains(err.Error(), `docker context "gone": not found`) {
		t.Errorf("missing context: %v", err)
	}
}

// TestNewDockerReachesContext connects New, through DOCKER_CONTEXT,
// to a fake daemon on a unix socket, which is all a context names.
func TestNewDockerReachesContext(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var clientCerts atomic.Int32
	srv := httptest.NewUnstartedServer(fakeDaemon(&clientCerts))
	srv.Listener = l
	srv.Start()
	defer srv.Close()

	dir := writeDockerConfig(t, "", testDockerContext{name: "fake", host: "unix://" + sock})
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("DOCKER_CONTEXT", "fake")
	t.Setenv("DOCKER_HOST", "")
	var logs bytes.Buffer
	d, err := New(context.Background(), &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("New: %v\n%s", err, logs.String())
	}
	defer d.Close()
	info, err := d.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Address != "unix://"+sock || info.Context != "fake" || info.Version != "28.5.2" {
		t.Errorf("info %+v", info)
	}
	for _, want := range []string{
		`msg="docker daemon address" host=unix://` + sock + ` context=fake source=DOCKER_CONTEXT`,
		`msg="connected to docker" host=unix://` + sock + ` context=fake api=1.47`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}

	t.Setenv("DOCKER_CONTEXT", "gone")
	if _, err := New(context.Background(), nil); err == nil ||
		err.Error() != fmt.Sprintf(`docker context "gone": not found in %s (set by DOCKER_CONTEXT)`, filepath.Join(dir, "contexts")) {
		t.Errorf("New with a missing context: %v", err)
	}
}
