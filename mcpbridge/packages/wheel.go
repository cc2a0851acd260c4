package packages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/net/html"
	"golang.org/x/sync/singleflight"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/statefile"
)

// A Pin names a wheel by its file name and the sha256 of its content.
type Pin struct {
	Name   string
	SHA256 string
}

// PinnedPip is the pip wheel installs use when MCP_BRIDGE_PIP_WHEEL names
// none and the image has no pip of its own: pip 26.0.1 (Python 3.9 and
// later), as PyPI serves it. A wheel from the index with any other
// content is refused, so that a compromised or impersonated index cannot
// put code into the installer, which writes the volume every sandbox
// mounts.
var PinnedPip = Pin{Name: "pip-26.0.1-py3-none-any.whl", SHA256: "bdb1b08f4274833d62c1aa29e20907365a2ceb950410df15fc9521bad440122b"}

// Bounds of what fetching the pinned wheel reads.
const (
	maxWheelBytes = 32 << 20
	maxPageBytes  = 8 << 20
)

// ErrPipWheel reports that no pip wheel could be had: the operator's file
// cannot be read, or the pinned wheel could not be fetched or did not
// match its pin.
var ErrPipWheel = errors.New("no pip wheel")

// An Installer is what a Store needs of the egress gateway: the network
// side of an install of session that may reach only hosts.
type Installer interface {
	// Serve handles one connection of the installer's pip.
	Serve(conn net.Conn)
}

// A NetworkFunc returns the egress gateway's side of an install of
// session that may reach only the index hosts and the file hosts
// ("host:port"), and the CA the installer must trust.
type NetworkFunc func(session string, index, files []string) (Installer, []byte)

// WheelsOptions configure Wheels.
type WheelsOptions struct {
	// Packages are the package settings: the operator's wheel
	// (PipWheel), the indexes and where the fetched wheel is kept
	// (WheelDir).
	Packages *Options
	// Network reaches the indexes through the gateway. Zero: the pinned
	// wheel is never fetched (only a kept one is used).
	Network NetworkFunc
	// Pin is the wheel fetched. Zero: PinnedPip.
	Pin Pin
	// Logger receives reports. Zero: discarded.
	Logger *slog.Logger
}

// Wheels gives installs pip's wheel: the operator's file
// (MCP_BRIDGE_PIP_WHEEL), else the pinned wheel, kept in the state
// directory once it was fetched through the gateway from the configured
// indexes, and checked against its pin whenever it is read.
type Wheels struct {
	opts  WheelsOptions
	log   *slog.Logger
	group singleflight.Group

	mu     sync.Mutex
	pinned []byte // the checked pinned wheel, once had
}

// NewWheels returns Wheels of opts.
func NewWheels(opts *WheelsOptions) *Wheels {
	w := &Wheels{opts: *opts, log: opts.Logger}
	if w.opts.Pin.Name == "" {
		w.opts.Pin = PinnedPip
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	return w
}

// Operator reports whether the operator named a wheel, which installs use
// even when the image has pip.
func (w *Wheels) Operator() bool { return w.opts.Packages.PipWheel != "" }

// Pin returns the wheel fetched when the operator names none.
func (w *Wheels) Pin() Pin { return w.opts.Pin }

// Kept returns the path the pinned wheel is kept at, "" when it is not
// kept.
func (w *Wheels) Kept() string {
	if w.opts.Packages.WheelDir == "" {
		return ""
	}
	return filepath.Join(w.opts.Packages.WheelDir, w.opts.Pin.Name)
}

// Wheel returns the wheel's file name and content: the operator's, or
// the pinned one (kept, or fetched now and kept).
func (w *Wheels) Wheel(ctx context.Context) (string, []byte, error) {
	if p := w.opts.Packages.PipWheel; p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			return "", nil, fmt.Errorf("%w: reading MCP_BRIDGE_PIP_WHEEL: %v", ErrPipWheel, err)
		}
		return path.Base(p), data, nil
	}
	w.mu.Lock()
	data := w.pinned
	w.mu.Unlock()
	if data != nil {
		return w.opts.Pin.Name, data, nil
	}
	v, err, _ := w.group.Do("pinned", func() (any, error) { return w.havePinned(ctx) })
	if err != nil {
		return "", nil, err
	}
	w.mu.Lock()
	w.pinned = v.([]byte)
	w.mu.Unlock()
	return w.opts.Pin.Name, v.([]byte), nil
}

// havePinned returns the pinned wheel kept in the state directory when it
// matches its pin, else fetches it and keeps it.
func (w *Wheels) havePinned(ctx context.Context) ([]byte, error) {
	kept := w.Kept()
	if kept != "" {
		data, err := os.ReadFile(kept)
		switch {
		case err == nil && w.matches(data):
			return data, nil
		case err == nil:
			w.log.Warn("the kept pip wheel does not match its pin: fetching it again", "path", kept)
		case !errors.Is(err, os.ErrNotExist):
			w.log.Warn("reading the kept pip wheel", "path", kept, "err", err)
		}
	}
	data, err := w.fetch(ctx)
	if err != nil {
		return nil, err
	}
	if kept != "" {
		if err := statefile.Write(kept, data); err != nil {
			w.log.Warn("keeping the fetched pip wheel: it is fetched again by the next bridge", "path", kept, "err", err)
		}
	}
	return data, nil
}

// matches reports whether data is the pinned wheel.
func (w *Wheels) matches(data []byte) bool {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]) == w.opts.Pin.SHA256
}

// fetch fetches the pinned wheel through the gateway from the first index
// that lists it.
func (w *Wheels) fetch(ctx context.Context) ([]byte, error) {
	o := w.opts.Packages
	if w.opts.Network == nil {
		return nil, fmt.Errorf("%w: %s is fetched through the egress gateway, which is not running; set MCP_BRIDGE_PIP_WHEEL to a pip wheel", ErrPipWheel, w.opts.Pin.Name)
	}
	ic, ca := w.opts.Network("pip-wheel", o.IndexHosts(), o.FileHosts())
	if ic == nil {
		return nil, fmt.Errorf("%w: no egress gateway to fetch %s through", ErrPipWheel, w.opts.Pin.Name)
	}
	client := gatewayClient(ic, ca)
	defer client.CloseIdleConnections()
	var errs []error
	for _, index := range append([]string{o.Index()}, o.ExtraIndexURLs...) {
		data, err := w.fetchFrom(ctx, client, index)
		if err == nil {
			w.log.Info("fetched pip's wheel", "wheel", w.opts.Pin.Name, "index", index, "bytes", len(data))
			return data, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", index, err))
	}
	return nil, fmt.Errorf("%w: fetching %s (sha256 pinned): %w; set MCP_BRIDGE_PIP_WHEEL to a pip wheel, or use an image with pip", ErrPipWheel, w.opts.Pin.Name, errors.Join(errs...))
}

// fetchFrom fetches the pinned wheel from the index at index: its project
// page (PEP 691 JSON or PEP 503 HTML) names the file's URL.
func (w *Wheels) fetchFrom(ctx context.Context, client *http.Client, index string) ([]byte, error) {
	page, err := url.Parse(strings.TrimSuffix(index, "/") + "/pip/")
	if err != nil {
		return nil, err
	}
	body, resp, err := get(ctx, client, page.String(), "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1", maxPageBytes)
	if err != nil {
		return nil, fmt.Errorf("reading its page of pip: %w", err)
	}
	href, listed, err := findFile(body, resp.Header.Get("Content-Type"), w.opts.Pin.Name)
	if err != nil {
		return nil, err
	}
	if listed != "" && !strings.EqualFold(listed, w.opts.Pin.SHA256) {
		return nil, fmt.Errorf("it lists %s with sha256 %s, not the pinned %s: refused", w.opts.Pin.Name, listed, w.opts.Pin.SHA256)
	}
	ref, err := url.Parse(href)
	if err != nil {
		return nil, fmt.Errorf("its link to %s: %v", w.opts.Pin.Name, err)
	}
	file := resp.Request.URL.ResolveReference(ref)
	file.Fragment = ""
	if file.Scheme != "http" && file.Scheme != "https" {
		return nil, fmt.Errorf("its link to %s is not http or https: %s", w.opts.Pin.Name, file.Redacted())
	}
	data, _, err := get(ctx, client, file.String(), "*/*", maxWheelBytes)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", file.Redacted(), err)
	}
	if !w.matches(data) {
		sum := sha256.Sum256(data)
		return nil, fmt.Errorf("%s from %s has sha256 %x, not the pinned %s: refused", w.opts.Pin.Name, file.Host, sum, w.opts.Pin.SHA256)
	}
	return data, nil
}

// get returns the body (at most limit bytes) of a GET of u.
func get(ctx context.Context, client *http.Client, u, accept string, limit int64) ([]byte, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return nil, nil, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(body)) > limit {
		return nil, nil, fmt.Errorf("over %d bytes", limit)
	}
	return body, resp, nil
}

// findFile returns the link to the file called name on a project page,
// and the sha256 the page gives it ("" when none).
func findFile(body []byte, contentType, name string) (href, sha string, err error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/vnd.pypi.simple.v1+json" {
		var page struct {
			Files []struct {
				Filename string            `json:"filename"`
				URL      string            `json:"url"`
				Hashes   map[string]string `json:"hashes"`
			} `json:"files"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return "", "", fmt.Errorf("its page of pip is not PEP 691 JSON: %v", err)
		}
		for _, f := range page.Files {
			if f.Filename == name {
				return f.URL, f.Hashes["sha256"], nil
			}
		}
		return "", "", fmt.Errorf("it does not list %s", name)
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return "", "", fmt.Errorf("it does not list %s", name)
		case html.StartTagToken:
			tag, hasAttr := z.TagName()
			if string(tag) != "a" || !hasAttr {
				continue
			}
			for {
				key, val, more := z.TagAttr()
				if string(key) == "href" {
					if u, err := url.Parse(string(val)); err == nil && path.Base(u.Path) == name {
						s, _ := strings.CutPrefix(u.Fragment, "sha256=")
						if s == u.Fragment {
							s = ""
						}
						return string(val), s, nil
					}
				}
				if !more {
					break
				}
			}
		}
	}
}

// gatewayClient returns an HTTP client whose every connection is one the
// gateway's side ic serves, trusting the system's roots and the gateway's
// CA (which signs the hosts it intercepts).
func gatewayClient(ic Installer, ca []byte) *http.Client {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	roots.AppendCertsFromPEM(ca)
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "egress-gateway.invalid:80"}),
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mine, theirs := net.Pipe()
			go ic.Serve(theirs)
			return mine, nil
		},
		TLSClientConfig:   &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: false,
	}}
}
