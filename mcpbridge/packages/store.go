package packages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// Backoff after a failed install: the next session tries again after
// firstBackoff, doubling up to maxBackoff.
const (
	firstBackoff = 30 * time.Second
	maxBackoff   = 10 * time.Minute
)

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
	Network NetworkFunc
	// Wheels give the pip wheel when the image has no pip or the
	// operator named one. Zero: Wheels of Packages and Network.
	Wheels *Wheels
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
	s := &Store{opts: *opts, log: log, sets: map[string]*setState{}, clock: time.Now}
	if s.opts.Wheels == nil {
		s.opts.Wheels = NewWheels(&WheelsOptions{Packages: opts.Packages, Network: opts.Network, Logger: log})
	}
	return s
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

// install installs the set key for image into its data volume, in a
// directory of its own, with pip (the operator's wheel, else the image's
// own pip, else the pinned wheel) run in an installer container with the
// sandboxes' hardening whose only network is the gateway, limited to the
// index hosts; then it makes the marker volume, naming that directory
// unless another install's marker came first, and returns the set the
// marker names.
func (s *Store) install(ctx context.Context, vols engine.Volumes, key, image string) (*Ready, error) {
	o, wheels := s.opts.Packages, s.opts.Wheels
	var wheelName string
	var wheel []byte
	if wheels.Operator() {
		var err error
		if wheelName, wheel, err = wheels.Wheel(ctx); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInstall, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, installTimeout)
	defer cancel()
	ready, unlock, err := s.lock(ctx, vols, key)
	if ready != nil || err != nil {
		return ready, err // another bridge installed it meanwhile
	}
	defer unlock()
	data, marker := volumeNames(key)
	if err := vols.CreateVolume(ctx, data, map[string]string{engine.LabelPackages: key, labelRole: "data"}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInstall, err)
	}
	site := randomSite()
	session := "packages-" + key[:8]
	ic, ca := s.opts.Network(session, o.IndexHosts(), o.FileHosts())
	if ic == nil {
		return nil, fmt.Errorf("%w: no egress gateway to install through", ErrInstall)
	}
	spec := s.opts.Spec
	spec.Image, spec.Session = image, session
	spec.Volumes = []engine.VolumeMount{{Name: data, Target: engine.PackagesDir}}
	spec.InBytes = max(int64(len(wheel)), maxWheelBytes) + 1<<20
	box := entrypoint.New(s.opts.Engine, &entrypoint.Options{Spec: spec, Logger: s.log, IdleTimeout: -1, Egress: ic.Serve, EgressCA: ca})
	defer box.Close()
	began := s.clock()
	s.log.Info("installing the package set", "key", key, "requirements", len(o.Requirements), "index", o.Index())
	uid, gid := userIDs(spec.User)
	if err := box.CopyIn(ctx, engine.PackagesDir, dirTar(site, uid, gid)); err != nil {
		return nil, fmt.Errorf("%w: making its directory: %v", ErrInstall, err)
	}
	if err := box.CopyIn(ctx, engine.InDir, filesTar(map[string][]byte{"requirements.txt": []byte(o.requirementsText())})); err != nil {
		return nil, fmt.Errorf("%w: delivering the requirements: %v", ErrInstall, err)
	}
	r, err := s.runPip(ctx, box, site, wheelName, wheel)
	if err == nil && r.NeedWheel {
		// The image has no pip: the pinned wheel, kept or fetched now.
		if wheelName, wheel, err = wheels.Wheel(ctx); err != nil {
			return nil, fmt.Errorf("%w: the image %s has no pip: %v", ErrInstall, image, err)
		}
		if err := box.CopyIn(ctx, engine.InDir, filesTar(map[string][]byte{wheelName: wheel})); err != nil {
			return nil, fmt.Errorf("%w: delivering pip: %v", ErrInstall, err)
		}
		r, err = s.runPip(ctx, box, site, wheelName, wheel)
	}
	if err != nil {
		return nil, err
	}
	if r.RC != 0 {
		// What pip left goes: the next attempt makes a directory of its own.
		box.Execute(ctx, fmt.Sprintf("import shutil\nshutil.rmtree(%q, ignore_errors=True)", engine.PackagesDir+"/"+site), 0)
		return nil, o.pipFailure(r)
	}
	labels := map[string]string{engine.LabelPackages: key, labelRole: "marker", labelSite: site,
		labelPython: r.Python, labelBytes: strconv.FormatInt(r.Bytes, 10)}
	if err := vols.CreateVolume(ctx, marker, labels); err != nil {
		return nil, fmt.Errorf("%w: marking it complete: %v", ErrInstall, err)
	}
	ready, err = s.find(ctx, vols, key)
	if err != nil || ready == nil {
		return nil, fmt.Errorf("%w: its marker volume: %v", ErrInstall, err)
	}
	if ready.Dir != engine.PackagesDir+"/"+site {
		// Another install of the same set finished first: ours goes.
		box.Execute(ctx, fmt.Sprintf("import shutil\nshutil.rmtree(%q, ignore_errors=True)", engine.PackagesDir+"/"+site), 0)
	}
	pip := "the image's"
	if !r.ImagePip {
		pip = wheelName
	}
	s.log.Info("installed the package set", "key", key, "python", r.Python, "pip", pip, "bytes", r.Bytes, "took", s.clock().Sub(began))
	s.evict(ctx, vols, key)
	return ready, nil
}

// runPip runs the installer's code in box: pip from the wheel called
// wheelName in engine.InDir, or with no wheel the image's own pip, when it
// has one.
func (s *Store) runPip(ctx context.Context, box *entrypoint.Session, site, wheelName string, wheel []byte) (installResult, error) {
	var r installResult
	o := s.opts.Packages
	args, _ := json.Marshal(o.pipArgs(engine.PackagesDir+"/"+site, engine.InDir+"/requirements.txt"))
	where := ""
	if wheel != nil {
		where = engine.InDir + "/" + wheelName
	}
	secs := int(installTimeout.Seconds()) - 30
	res, err := box.Execute(ctx, fmt.Sprintf(installCode, engine.PackagesDir+"/"+site, args, secs, where), installTimeout)
	if err != nil {
		return r, fmt.Errorf("%w: %v", ErrInstall, err)
	}
	if res.Status != entrypoint.StatusSuccess || json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &r) != nil {
		return r, fmt.Errorf("%w: the installer said %q %s", ErrInstall, cut(res.Stdout+res.Stderr, 300), res.ExceptionMessage)
	}
	return r, nil
}

// lockPoll is how often a bridge waiting for another's install looks.
var lockPoll = time.Second

// lock makes this bridge the one installing the set key on the engine:
// the lock is a volume whose label holds the token of the bridge that
// created it (the engine makes one volume of a name, and answers a second
// create with the first), removed when the install ends. While another
// bridge holds it, lock waits for that install's marker (and returns the
// set it made) or for the lock to go; a lock older than an install may
// take is a crashed bridge's, and is removed.
func (s *Store) lock(ctx context.Context, vols engine.Volumes, key string) (*Ready, func(), error) {
	name := "mcp-pkgs-" + key + "-lock"
	token := randomSite()
	for {
		if err := vols.CreateVolume(ctx, name, map[string]string{engine.LabelPackages: key, labelRole: "lock", labelOwner: token}); err != nil {
			return nil, nil, fmt.Errorf("%w: locking it: %v", ErrInstall, err)
		}
		held, err := vols.Volume(ctx, name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%w: locking it: %v", ErrInstall, err)
		}
		if err == nil && held.Labels[labelOwner] == token {
			// Ours; the set may have been finished by the holder before us.
			if r, err := s.find(ctx, vols, key); r != nil || err != nil {
				vols.RemoveVolume(context.WithoutCancel(ctx), name)
				return r, nil, err
			}
			return nil, func() { vols.RemoveVolume(context.WithoutCancel(ctx), name) }, nil
		}
		if err == nil && !held.Created.IsZero() && s.clock().Sub(held.Created) > installTimeout {
			s.log.Warn("removing a stale package install lock", "key", key, "created", held.Created)
			vols.RemoveVolume(ctx, name)
			continue
		}
		s.log.Info("waiting for another install of the package set", "key", key)
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%w: waiting for another bridge's install: %v", ErrInstall, ctx.Err())
		case <-time.After(lockPoll):
		}
		if r, err := s.find(ctx, vols, key); r != nil || err != nil {
			return r, nil, err
		}
	}
}
