package packages

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A proxyInstaller is an Installer that forwards each proxied request to
// where it names, as the gateway does for a host it allows, counting
// them.
type proxyInstaller struct{ requests *atomic.Int32 }

func (p proxyInstaller) Serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		p.requests.Add(1)
		req.RequestURI = ""
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			fmt.Fprintf(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
			continue
		}
		resp.Write(conn)
		resp.Body.Close()
	}
}

// A wheelIndex is a loopback index serving pip's project page in the
// format asked and the file at /files/, counting downloads.
type wheelIndex struct {
	*httptest.Server
	file      []byte // what /files/ serves
	listed    string // the sha256 the page gives ("" none)
	json      bool   // answer with PEP 691 JSON
	downloads atomic.Int32
}

func newWheelIndex(t *testing.T, name string, file []byte) *wheelIndex {
	ix := &wheelIndex{file: file}
	ix.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/simple/pip/":
			frag := ""
			if ix.listed != "" {
				frag = "#sha256=" + ix.listed
			}
			if ix.json {
				w.Header().Set("Content-Type", "application/vnd.pypi.simple.v1+json")
				fmt.Fprintf(w, `{"meta":{"api-version":"1.1"},"name":"pip","files":[{"filename":"pip-0.1-py3-none-any.whl","url":"/files/old","hashes":{}},{"filename":%q,"url":"../../files/%s","hashes":{"sha256":%q}}]}`, name, name, ix.listed)
				return
			}
			fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/pip-0.1-py3-none-any.whl">pip-0.1-py3-none-any.whl</a>
<a href="../../files/%s%s" data-requires-python="&gt;=3.9">%s</a></body></html>`, name, frag, name)
		case "/files/" + name:
			ix.downloads.Add(1)
			w.Write(ix.file)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ix.Close)
	return ix
}

// testPin returns a pin of content.
func testPin(content []byte) Pin {
	sum := sha256.Sum256(content)
	return Pin{Name: "pip-9.9-py3-none-any.whl", SHA256: hex.EncodeToString(sum[:])}
}

func newTestWheels(o *Options, pin Pin, requests *atomic.Int32) *Wheels {
	return NewWheels(&WheelsOptions{Packages: o, Pin: pin, Network: func(string, []string, []string) (Installer, []byte) {
		return proxyInstaller{requests}, nil
	}})
}

// TestWheelsFetchAndKeep: the pinned wheel is fetched through the
// gateway from an index's page (PEP 503 HTML or PEP 691 JSON, relative
// links), kept in WheelDir, read from there by the next bridge without
// the index, and fetched again when what is kept does not match its pin.
func TestWheelsFetchAndKeep(t *testing.T) {
	content := []byte("PK the pinned pip")
	pin := testPin(content)
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			ix := newWheelIndex(t, pin.Name, content)
			ix.json, ix.listed = asJSON, pin.SHA256
			dir := t.TempDir()
			var requests atomic.Int32
			o := &Options{IndexURL: ix.URL + "/simple/", WheelDir: dir}
			name, data, err := newTestWheels(o, pin, &requests).Wheel(context.Background())
			if err != nil || name != pin.Name || string(data) != string(content) {
				t.Fatalf("Wheel: %q %q %v", name, data, err)
			}
			if requests.Load() != 2 || ix.downloads.Load() != 1 {
				t.Errorf("%d requests through the gateway, %d downloads; want 2 and 1", requests.Load(), ix.downloads.Load())
			}
			if kept, err := os.ReadFile(filepath.Join(dir, pin.Name)); err != nil || string(kept) != string(content) {
				t.Fatalf("kept: %q %v", kept, err)
			}
			ix.Close()
			w := newTestWheels(o, pin, &requests)
			if _, data, err := w.Wheel(context.Background()); err != nil || string(data) != string(content) {
				t.Fatalf("from the kept file, the index gone: %q %v", data, err)
			}
			if w.Kept() != filepath.Join(dir, pin.Name) || w.Operator() {
				t.Errorf("Kept %q, Operator %v", w.Kept(), w.Operator())
			}
		})
	}

	// A kept file that was changed is not used: the wheel is fetched again.
	ix := newWheelIndex(t, pin.Name, content)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, pin.Name), []byte("PK changed on disk"), 0o644)
	var requests atomic.Int32
	_, data, err := newTestWheels(&Options{IndexURL: ix.URL + "/simple/", WheelDir: dir}, pin, &requests).Wheel(context.Background())
	if err != nil || string(data) != string(content) || ix.downloads.Load() != 1 {
		t.Fatalf("a changed kept file: %q %v, %d downloads", data, err, ix.downloads.Load())
	}
	if kept, _ := os.ReadFile(filepath.Join(dir, pin.Name)); string(kept) != string(content) {
		t.Errorf("the changed file was not replaced: %q", kept)
	}
}

// TestWheelsRefuseWhatIsNotPinned: an index that serves other content
// under the pinned name, or lists it with another sha256, is refused with
// both sums named and nothing kept; an index without the file is passed
// over for the next one; with none left the error says what to set.
func TestWheelsRefuseWhatIsNotPinned(t *testing.T) {
	content := []byte("PK the pinned pip")
	pin := testPin(content)
	var requests atomic.Int32

	forged := newWheelIndex(t, pin.Name, []byte("PK a forged pip"))
	dir := t.TempDir()
	_, _, err := newTestWheels(&Options{IndexURL: forged.URL + "/simple/", WheelDir: dir}, pin, &requests).Wheel(context.Background())
	if !errors.Is(err, ErrPipWheel) || !strings.Contains(err.Error(), "not the pinned "+pin.SHA256) || !strings.Contains(err.Error(), "refused") ||
		!strings.Contains(err.Error(), "MCP_BRIDGE_PIP_WHEEL") {
		t.Fatalf("a forged wheel: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused wheel left %d files in the state directory", len(entries))
	}

	forged.listed = strings.Repeat("0", 64)
	before := forged.downloads.Load()
	_, _, err = newTestWheels(&Options{IndexURL: forged.URL + "/simple/"}, pin, &requests).Wheel(context.Background())
	if !errors.Is(err, ErrPipWheel) || !strings.Contains(err.Error(), "lists "+pin.Name+" with sha256 "+forged.listed) || forged.downloads.Load() != before {
		t.Fatalf("a page listing another sha256: %v (%d downloads)", err, forged.downloads.Load()-before)
	}

	empty := httptest.NewServer(http.NotFoundHandler())
	defer empty.Close()
	good := newWheelIndex(t, pin.Name, content)
	o := &Options{IndexURL: empty.URL + "/simple/", ExtraIndexURLs: []string{good.URL + "/simple/"}}
	if _, data, err := newTestWheels(o, pin, &requests).Wheel(context.Background()); err != nil || string(data) != string(content) {
		t.Fatalf("the second index: %q %v", data, err)
	}
	good.Close()
	_, _, err = newTestWheels(o, pin, &requests).Wheel(context.Background())
	if !errors.Is(err, ErrPipWheel) || !strings.Contains(err.Error(), empty.URL+"/simple/: reading its page of pip: 404") {
		t.Fatalf("no index has it: %v", err)
	}

	noGateway := NewWheels(&WheelsOptions{Packages: &Options{}, Pin: pin})
	if _, _, err := noGateway.Wheel(context.Background()); !errors.Is(err, ErrPipWheel) || !strings.Contains(err.Error(), "gateway") {
		t.Fatalf("without a gateway: %v", err)
	}
}

// TestWheelsOperatorFile: MCP_BRIDGE_PIP_WHEEL's file is used as it is,
// never fetched; one that cannot be read is a clear error.
func TestWheelsOperatorFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pip-23.0.1-py3-none-any.whl")
	os.WriteFile(p, []byte("PK operator's"), 0o644)
	var requests atomic.Int32
	w := newTestWheels(&Options{PipWheel: p}, PinnedPip, &requests)
	if name, data, err := w.Wheel(context.Background()); err != nil || name != "pip-23.0.1-py3-none-any.whl" || string(data) != "PK operator's" || !w.Operator() {
		t.Fatalf("the operator's wheel: %q %q %v", name, data, err)
	}
	if requests.Load() != 0 {
		t.Errorf("%d requests for an operator's wheel", requests.Load())
	}
	os.Remove(p)
	if _, _, err := w.Wheel(context.Background()); !errors.Is(err, ErrPipWheel) || !strings.Contains(err.Error(), "MCP_BRIDGE_PIP_WHEEL") {
		t.Fatalf("a gone operator's wheel: %v", err)
	}
}

// TestFindFile: the link to the pinned file is found among others, with
// the sha256 of its fragment; a page without it says so.
func TestFindFile(t *testing.T) {
	page := []byte(`<html><body><a>no href</a><a href="x/pip-26.0-py3-none-any.whl#sha256=aa">a</a>
<a class="x" href="https://files.example.org/p/pip-26.0.1-py3-none-any.whl#sha256=bb">b</a></body></html>`)
	href, sha, err := findFile(page, "text/html", "pip-26.0.1-py3-none-any.whl")
	if err != nil || href != "https://files.example.org/p/pip-26.0.1-py3-none-any.whl#sha256=bb" || sha != "bb" {
		t.Fatalf("findFile: %q %q %v", href, sha, err)
	}
	if _, _, err := findFile(page, "text/html", "pip-1-py3-none-any.whl"); err == nil || !strings.Contains(err.Error(), "does not list pip-1-py3-none-any.whl") {
		t.Fatalf("not listed: %v", err)
	}
	if _, _, err := findFile([]byte("{"), "application/vnd.pypi.simple.v1+json", "x"); err == nil || !strings.Contains(err.Error(), "PEP 691") {
		t.Fatalf("bad JSON: %v", err)
	}
}
