package packages

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// Labels of a package set's volumes, besides engine.LabelPackages (the
// set's key).
const (
	// labelSite names the directory of the data volume that holds the
	// complete install (on the marker volume).
	labelSite = engine.LabelPackages + ".site"
	// labelPython is the Python version the set was installed for.
	labelPython = engine.LabelPackages + ".python"
	// labelBytes is the size of the installed set.
	labelBytes = engine.LabelPackages + ".bytes"
	// labelRole is "data", "marker" or "lock".
	labelRole = engine.LabelPackages + ".role"
	// labelOwner is the token of the install holding a lock volume.
	labelOwner = engine.LabelPackages + ".owner"
)

// installTimeout bounds one install of a set.
const installTimeout = 15 * time.Minute

// Backoff after a failed install: the next session tries again after
// firstBackoff, doubling up to maxBackoff.
const (
	firstBackoff = 30 * time.Second
	maxBackoff   = 10 * time.Minute
)

// ErrInstall reports a package set that could not be installed.
var ErrInstall = errors.New("installing the package set failed")

// An Installer is what a Store needs of the egress gateway: the network
// side of an install of session that may reach only hosts.
type Installer interface {
	// Serve handles one connection of the installer's pip.
	Serve(conn net.Conn)
}

// StoreOptions configure a Store.
type StoreOptions struct {
	// Packages are the package settings.
	Packages *Options
	// Engine is where sandboxes run; it must keep named volumes
	// (engine.Volumes) for a set to be installed.
	Engine engine.Engine
	// Spec is the sandboxes' spec (image, user, limits) the installer
	// container is made from.
	Spec engine.Spec
	// Network returns the gateway's side of an install that may reach
	// only the index hosts and the file hosts ("host:port"), and the CA
	// the installer must trust. Required.
	Network func(session string, index, files []string) (Installer, []byte)
	// Logger receives reports. Zero: discarded.
	Logger *slog.Logger
}

// A Store makes the configured package set ready on an engine: installed
// once per configuration (image, requirements, indexes, builds) into a
// named volume every sandbox of that configuration mounts read-only.
// The set is complete when its marker volume exists; two installs of the
// same set at once (two bridges) each write a directory of their own,
// and the first marker made names the one sandboxes use, so a sandbox
// never mounts a half-installed set.
type Store struct {
	opts StoreOptions
	log  *slog.Logger

	mu    sync.Mutex
	sets  map[string]*setState // by key
	clock func() time.Time
}

// A setState is what a Store knows of one set.
type setState struct {
	mu      sync.Mutex // held while the set is being installed
	ready   *Ready
	err     error
	retryAt time.Time
	backoff time.Duration
}

// Ready is an installed set: the volume to mount and the directory of it
// to add to the import path.
type Ready struct {
	Mount engine.VolumeMount
	Dir   string
	// Python and Bytes describe the install.
	Python string
	Bytes  int64
}

// NewStore returns a Store; it does nothing until Prepare is called.
func NewStore(opts *StoreOptions) *Store {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{opts: *opts, log: log, sets: map[string]*setState{}, clock: time.Now}
}

// Prepare is an entrypoint.Options.Prepare: it mounts the package set in
// spec, installing it first when the engine lacks it, and returns its
// directory. Without requirements it does nothing.
func (s *Store) Prepare(ctx context.Context, spec *engine.Spec) ([]string, error) {
	if s == nil || len(s.opts.Packages.Requirements) == 0 {
		return nil, nil
	}
	r, err := s.Ensure(ctx, spec.Image)
	if err != nil {
		return nil, err
	}
	spec.Volumes = append(spec.Volumes, r.Mount)
	return []string{r.Dir}, nil
}

// Ensure returns the set of the configuration for image, installing it
// when the engine does not have it. A failed install is not tried again
// before its backoff passes: until then Ensure returns its error.
func (s *Store) Ensure(ctx context.Context, image string) (*Ready, error) {
	vols, err := engine.As[engine.Volumes](ctx, s.opts.Engine)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, fmt.Errorf("%w: the engine keeps no named volumes (package sets need Docker or Podman, and one engine)", ErrInstall)
	} else if err != nil {
		return nil, err
	}
	imageID := image
	if ids, err := engine.As[engine.ImageIDs](ctx, s.opts.Engine); err == nil {
		if id, err := ids.ImageID(ctx, image); err == nil {
			imageID = id
		}
	}
	key := s.key(imageID)
	s.mu.Lock()
	st := s.sets[key]
	if st == nil {
		st = &setState{}
		s.sets[key] = st
	}
	s.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ready != nil {
		return st.ready, nil
	}
	if st.err != nil && s.clock().Before(st.retryAt) {
		return nil, st.err
	}
	r, err := s.find(ctx, vols, key)
	if err == nil && r == nil {
		r, err = s.install(ctx, vols, key, image)
	}
	if err != nil {
		st.backoff = min(max(2*st.backoff, firstBackoff), maxBackoff)
		st.err, st.retryAt = err, s.clock().Add(st.backoff)
		return nil, err
	}
	st.ready, st.err, st.backoff = r, nil, 0
	s.touch(ctx, vols, key)
	return r, nil
}

// touch records that this bridge uses the set key today: a small volume
// named for the day (made at most once a day per set and engine, the
// previous day's removed), whose creation time eviction orders sets by.
func (s *Store) touch(ctx context.Context, vols engine.Volumes, key string) {
	day := s.clock().UTC().Format("20060102")
	name := "mcp-pkgs-" + key + "-used-" + day
	if err := vols.CreateVolume(ctx, name, map[string]string{engine.LabelPackages: key, labelRole: "used"}); err != nil {
		s.log.Warn("recording a package set's use", "key", key, "err", err)
		return
	}
	all, err := vols.VolumesLabelled(ctx, engine.LabelPackages)
	if err != nil {
		return
	}
	for _, v := range all {
		if v.Labels[engine.LabelPackages] == key && v.Labels[labelRole] == "used" && v.Name != name {
			vols.RemoveVolume(ctx, v.Name)
		}
	}
}

// key identifies a set: the image, the requirements, the indexes and
// whether builds are allowed (sha256, 16 hex digits).
func (s *Store) key(imageID string) string {
	o := s.opts.Packages
	h := sha256.New()
	fmt.Fprintf(h, "image %s\nindex %s\nsdist %v\n", imageID, o.Index(), o.AllowSdist)
	for _, x := range o.ExtraIndexURLs {
		fmt.Fprintf(h, "extra %s\n", x)
	}
	for _, r := range o.Requirements {
		fmt.Fprintf(h, "req %s\n", r)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// volumeNames returns the data and marker volumes of the set key.
func volumeNames(key string) (data, marker string) {
	return "mcp-pkgs-" + key, "mcp-pkgs-" + key + "-ok"
}

// find returns the set key when its marker exists, or nil.
func (s *Store) find(ctx context.Context, vols engine.Volumes, key string) (*Ready, error) {
	data, marker := volumeNames(key)
	m, err := vols.Volume(ctx, marker)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInstall, err)
	}
	site := m.Labels[labelSite]
	if !validSite(site) {
		return nil, fmt.Errorf("%w: the marker volume %s names no install directory", ErrInstall, marker)
	}
	n, _ := strconv.ParseInt(m.Labels[labelBytes], 10, 64)
	return &Ready{Mount: engine.VolumeMount{Name: data, Target: engine.PackagesDir, ReadOnly: true},
		Dir: engine.PackagesDir + "/" + site, Python: m.Labels[labelPython], Bytes: n}, nil
}

// validSite reports whether site is a directory name an install makes.
func validSite(site string) bool {
	rest, ok := strings.CutPrefix(site, "site-")
	if !ok || len(rest) != 16 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// IndexHosts returns the hosts ("host:port") of the indexes installs
// use: the only ones an install gives a secret to (an inject rule's).
func (o *Options) IndexHosts() []string {
	var hosts []string
	for _, raw := range append([]string{o.Index()}, o.ExtraIndexURLs...) {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		hosts = append(hosts, net.JoinHostPort(u.Hostname(), port))
	}
	return hosts
}

// FileHosts returns the hosts ("host:port") the indexes keep their
// files on, which installs reach too: PyPI's with PyPI, and
// ExtraFileHosts.
func (o *Options) FileHosts() []string {
	var hosts []string
	for _, raw := range append([]string{o.Index()}, o.ExtraIndexURLs...) {
		if u, err := url.Parse(raw); err == nil && strings.EqualFold(u.Hostname(), "pypi.org") {
			hosts = append(hosts, "files.pythonhosted.org:443")
			break
		}
	}
	return append(hosts, o.ExtraFileHosts...)
}

// pipArgs returns pip's arguments for an install into target of the
// requirements file reqs, run from the wheel at wheel.
func (o *Options) pipArgs(wheel, target, reqs string) []string {
	return append(append([]string{wheel + "/pip"}, o.installOptions(target)...), "-r", reqs)
}

// InstallArgs returns pip's arguments (after "pip") for a live install of
// reqs into target: the indexes, wheels only unless builds are allowed.
func (o *Options) InstallArgs(target string, reqs []Requirement) []string {
	args := o.installOptions(target)
	for _, r := range reqs {
		args = append(args, r.String())
	}
	return args
}

// installOptions returns "install" and its options for an install into
// target: no prompts, cache or version check, the indexes, and wheels
// only unless builds are allowed.
func (o *Options) installOptions(target string) []string {
	args := []string{"install", "--no-input", "--no-cache-dir", "--disable-pip-version-check",
		"--progress-bar", "off", "--target", target, "--index-url", o.Index()}
	for _, x := range o.ExtraIndexURLs {
		args = append(args, "--extra-index-url", x)
	}
	if !o.AllowSdist {
		args = append(args, "--only-binary=:all:")
	}
	return args
}

// requirementsText returns the set as a requirements file.
func (o *Options) requirementsText() string {
	var b strings.Builder
	for _, r := range o.Requirements {
		b.WriteString(r.String() + "\n")
	}
	return b.String()
}

// randomSite returns a new install directory's name.
func randomSite() string {
	var b [8]byte
	rand.Read(b[:])
	return "site-" + hex.EncodeToString(b[:])
}

// dirTar returns a tar stream of one directory, name, owned by uid:gid
// with mode 0755: what the engine extracts to make a directory the
// sandbox user may write in a volume whose root belongs to root.
func dirTar(name string, uid, gid int) io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, Uid: uid, Gid: gid, ModTime: time.Unix(0, 0)})
	tw.Close()
	return &buf
}

// filesTar returns a tar stream of regular files (name → content), owned
// by root, mode 0644.
func filesTar(files map[string][]byte) io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)})
		tw.Write(data)
	}
	tw.Close()
	return &buf
}

// userIDs returns the uid and gid of a "uid:gid" user (65534:65534 when
// empty).
func userIDs(user string) (int, int) {
	if user == "" {
		return 65534, 65534
	}
	u, g, ok := strings.Cut(user, ":")
	if !ok {
		g = u
	}
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if err1 != nil || err2 != nil {
		return 65534, 65534
	}
	return uid, gid
}

// ReadWheel returns the pip wheel's file name and content.
func (o *Options) ReadWheel() (string, []byte, error) {
	p, err := o.Wheel()
	if err != nil {
		return "", nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", nil, fmt.Errorf("reading the pip wheel: %w", err)
	}
	return path.Base(p), data, nil
}

// installResult is what the installer's code prints.
type installResult struct {
	RC     int    `json:"rc"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	Bytes  int64  `json:"bytes"`
	Python string `json:"python"`
}

// pipFailure says why pip failed: its ERROR lines (or its last lines),
// with the set named.
func (o *Options) pipFailure(r installResult) error {
	var lines []string
	for l := range strings.SplitSeq(r.Stderr, "\n") {
		if strings.HasPrefix(l, "ERROR:") {
			lines = append(lines, strings.TrimSpace(strings.TrimPrefix(l, "ERROR:")))
		}
	}
	if len(lines) == 0 {
		all := strings.Split(strings.TrimSpace(r.Stderr+"\n"+r.Stdout), "\n")
		lines = all[max(0, len(all)-3):]
	}
	var names []string
	for _, q := range o.Requirements {
		names = append(names, q.String())
	}
	return fmt.Errorf("%w (%s): pip exited with %d: %s", ErrInstall, cut(strings.Join(names, " "), 200), r.RC, strings.Join(lines, "; "))
}

// evict removes package sets, least recently used first (the day a
// bridge last used a set, else its install), while the sets on the engine
// hold more than the cache bound; keep (the set just installed) stays,
// and so does a set a container mounts (its removal fails as in use).
// Each set's size is its marker's. Failures are logged.
func (s *Store) evict(ctx context.Context, vols engine.Volumes, keep string) {
	all, err := vols.VolumesLabelled(ctx, engine.LabelPackages)
	if err != nil {
		s.log.Warn("listing package sets", "err", err)
		return
	}
	type set struct {
		key   string
		bytes int64
		used  time.Time
		extra []string // its used-day volumes
	}
	sets := map[string]*set{}
	of := func(key string) *set {
		if sets[key] == nil {
			sets[key] = &set{key: key}
		}
		return sets[key]
	}
	var total int64
	for _, v := range all {
		key := v.Labels[engine.LabelPackages]
		switch v.Labels[labelRole] {
		case "marker":
			st := of(key)
			st.bytes, _ = strconv.ParseInt(v.Labels[labelBytes], 10, 64)
			total += st.bytes
			if v.Created.After(st.used) {
				st.used = v.Created
			}
		case "used":
			st := of(key)
			st.extra = append(st.extra, v.Name)
			if v.Created.After(st.used) {
				st.used = v.Created
			}
		}
	}
	limit := s.opts.Packages.CacheMax()
	order := slices.SortedFunc(maps.Values(sets), func(a, b *set) int { return a.used.Compare(b.used) })
	for _, st := range order {
		if total <= limit {
			return
		}
		if st.key == keep || st.key == "" || st.bytes == 0 {
			continue
		}
		data, marker := volumeNames(st.key)
		if err := vols.RemoveVolume(ctx, data); err != nil {
			s.log.Info("keeping a package set past the cache bound", "key", st.key, "err", err)
			continue
		}
		for _, v := range append(st.extra, marker) {
			if err := vols.RemoveVolume(ctx, v); err != nil {
				s.log.Warn("removing a package set's volume", "volume", v, "err", err)
			}
		}
		total -= st.bytes
		s.mu.Lock()
		delete(s.sets, st.key)
		s.mu.Unlock()
		s.log.Info("removed the least recently used package set past the cache bound", "key", st.key, "bytes", st.bytes)
	}
}
