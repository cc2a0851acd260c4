package packages

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// A fakeVolumes is an engine with named volumes whose sandboxes never
// start: an install always fails, a marker made by hand is found.
type fakeVolumes struct {
	mu      sync.Mutex
	vols    map[string]engine.VolumeInfo
	starts  int
	imageID string
	inUse   map[string]bool
}

func (f *fakeVolumes) Start(context.Context, engine.Spec) (engine.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts++
	return nil, errors.New("no sandbox here")
}

func (f *fakeVolumes) CreateVolume(_ context.Context, name string, labels map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.vols[name]; !ok {
		f.vols[name] = engine.VolumeInfo{Name: name, Labels: labels}
	}
	return nil
}

func (f *fakeVolumes) Volume(_ context.Context, name string) (engine.VolumeInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.vols[name]
	if !ok {
		return v, fmt.Errorf("volume %s: %w", name, fs.ErrNotExist)
	}
	return v, nil
}

func (f *fakeVolumes) VolumesLabelled(_ context.Context, label string) ([]engine.VolumeInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.VolumeInfo
	for _, v := range f.vols {
		if _, ok := v.Labels[label]; ok {
			out = append(out, v)
		}
	}
	return out, nil
}

func (f *fakeVolumes) RemoveVolume(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inUse[name] {
		return fmt.Errorf("removing volume %s: %w", name, engine.ErrVolumeInUse)
	}
	delete(f.vols, name)
	return nil
}

func (f *fakeVolumes) ImageID(context.Context, string) (string, error) { return f.imageID, nil }

func newTestStore(t *testing.T, eng engine.Engine, reqs string) *Store {
	t.Helper()
	r, err := ParseList(reqs)
	if err != nil {
		t.Fatal(err)
	}
	return NewStore(&StoreOptions{Packages: &Options{Requirements: r, IndexURL: "http://127.0.0.1:9/simple/", PipWheel: "/nonexistent/pip-23.0.1-py3-none-any.whl"},
		Engine: eng, Network: func(string, []string, []string) (Installer, []byte) { return closer{}, nil }})
}

func TestKeyChangesWithTheConfiguration(t *testing.T) {
	eng := &fakeVolumes{vols: map[string]engine.VolumeInfo{}}
	base := newTestStore(t, eng, "numpy pandas").key("sha256:aaa")
	if again := newTestStore(t, eng, "pandas  numpy").key("sha256:aaa"); again != base {
		t.Errorf("the same set written otherwise has another key: %s, %s", base, again)
	}
	seen := map[string]string{base: "base"}
	for name, s := range map[string]*Store{
		"another image":       newTestStore(t, eng, "numpy pandas"),
		"another requirement": newTestStore(t, eng, "numpy pandas<3"),
	} {
		img := "sha256:aaa"
		if name == "another image" {
			img = "sha256:bbb"
		}
		k := s.key(img)
		if prev, ok := seen[k]; ok {
			t.Errorf("%s has the key of %s", name, prev)
		}
		seen[k] = name
	}
	sdist := newTestStore(t, eng, "numpy pandas")
	sdist.opts.Packages.AllowSdist = true
	extra := newTestStore(t, eng, "numpy pandas")
	extra.opts.Packages.ExtraIndexURLs = []string{"https://mirror.example/simple/"}
	for name, k := range map[string]string{"builds allowed": sdist.key("sha256:aaa"), "an extra index": extra.key("sha256:aaa")} {
		if _, ok := seen[k]; ok {
			t.Errorf("%s does not change the key", name)
		}
		seen[k] = name
	}
	if len(base) != 16 {
		t.Errorf("key %q", base)
	}
}

func TestEnsureFindsAMarkedSet(t *testing.T) {
	eng := &fakeVolumes{vols: map[string]engine.VolumeInfo{}, imageID: "sha256:aaa"}
	s := newTestStore(t, eng, "numpy")
	data, marker := volumeNames(s.key("sha256:aaa"))
	eng.vols[marker] = engine.VolumeInfo{Name: marker, Labels: map[string]string{labelSite: "site-0123456789abcdef", labelPython: "3.11.2", labelBytes: "1234"}}
	spec := engine.Spec{Image: "img"}
	dirs, err := s.Prepare(context.Background(), &spec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dirs, []string{"/opt/mcp-packages/site-0123456789abcdef"}) ||
		!slices.Equal(spec.Volumes, []engine.VolumeMount{{Name: data, Target: engine.PackagesDir, ReadOnly: true}}) {
		t.Fatalf("Prepare: %q, %+v", dirs, spec.Volumes)
	}
	if eng.starts != 0 {
		t.Errorf("a marked set started %d installers", eng.starts)
	}
	// A marker naming no install directory is not trusted.
	eng.vols[marker] = engine.VolumeInfo{Name: marker, Labels: map[string]string{labelSite: "../../etc"}}
	s = newTestStore(t, eng, "numpy")
	if _, err := s.Ensure(context.Background(), "img"); !errors.Is(err, ErrInstall) {
		t.Fatalf("a bad marker: %v", err)
	}
}

func TestEnsureBacksOff(t *testing.T) {
	eng := &fakeVolumes{vols: map[string]engine.VolumeInfo{}, imageID: "sha256:aaa"}
	s := newTestStore(t, eng, "numpy")
	now := time.Unix(1_800_000_000, 0)
	s.clock = func() time.Time { return now }
	_, err := s.Ensure(context.Background(), "img")
	if !errors.Is(err, ErrInstall) || !strings.Contains(err.Error(), "pip wheel") {
		t.Fatalf("an install without pip: %v", err)
	}
	now = now.Add(firstBackoff - time.Second)
	if _, again := s.Ensure(context.Background(), "img"); again != err {
		t.Fatalf("within the backoff: %v, want the same error", again)
	}
	now = now.Add(2 * time.Second)
	s.opts.Packages.PipWheel = "/nonexistent/other-pip.whl"
	if _, again := s.Ensure(context.Background(), "img"); again == err || !strings.Contains(again.Error(), "other-pip") {
		t.Fatalf("after the backoff: %v, want a new attempt", again)
	}
	if st := s.sets[s.key("sha256:aaa")]; st.backoff != 2*firstBackoff {
		t.Errorf("the second backoff: %v", st.backoff)
	}
}

func TestPipPlan(t *testing.T) {
	o := &Options{IndexURL: "https://pypi.org/simple/", ExtraIndexURLs: []string{"http://127.0.0.1:8080/simple/"}, ExtraFileHosts: []string{"files.example.org:443"}}
	if got := strings.Join(o.IndexHosts(), " "); got != "pypi.org:443 127.0.0.1:8080" {
		t.Errorf("index hosts: %s", got)
	}
	if got := strings.Join(o.FileHosts(), " "); got != "files.pythonhosted.org:443 files.example.org:443" {
		t.Errorf("file hosts: %s", got)
	}
	if got := (&Options{IndexURL: "https://pypi.internal/simple/"}).FileHosts(); len(got) != 0 {
		t.Errorf("file hosts without PyPI: %q", got)
	}
	args := strings.Join(o.pipArgs("/opt/mcp-packages/site-x", "/w/req.txt"), " ")
	for _, want := range []string{"install --no-input", "--target /opt/mcp-packages/site-x", "--index-url https://pypi.org/simple/",
		"--extra-index-url http://127.0.0.1:8080/simple/", "--only-binary=:all:", "-r /w/req.txt", "--no-input"} {
		if !strings.Contains(args, want) {
			t.Errorf("pip's arguments lack %q: %s", want, args)
		}
	}
	o.AllowSdist = true
	if strings.Contains(strings.Join(o.pipArgs("t", "r"), " "), "only-binary") {
		t.Error("builds allowed, yet wheels only")
	}
	o.Requirements, _ = ParseList("nosuchpkg>=1")
	err := o.pipFailure(installResult{RC: 1, Stderr: "Looking in indexes: x\nERROR: Could not find a version that satisfies the requirement nosuchpkg>=1 (from versions: none)\nERROR: No matching distribution found for nosuchpkg>=1\n"})
	if !errors.Is(err, ErrInstall) || !strings.Contains(err.Error(), "(nosuchpkg>=1): pip exited with 1: Could not find a version") ||
		!strings.Contains(err.Error(), "No matching distribution found for nosuchpkg>=1") {
		t.Errorf("pip's failure: %v", err)
	}
}

// TestEvict: past the cache bound the least recently used sets go first
// (a set installed long ago but used today stays), but not the one just
// installed nor one a container mounts; a set's volumes all go with it.
func TestEvict(t *testing.T) {
	eng := &fakeVolumes{vols: map[string]engine.VolumeInfo{}, inUse: map[string]bool{}}
	now := time.Unix(1_800_000_000, 0)
	add := func(key string, mib int64, age time.Duration) {
		data, marker := volumeNames(key)
		eng.vols[data] = engine.VolumeInfo{Name: data, Labels: map[string]string{engine.LabelPackages: key, labelRole: "data"}}
		eng.vols[marker] = engine.VolumeInfo{Name: marker, Created: now.Add(-age),
			Labels: map[string]string{engine.LabelPackages: key, labelRole: "marker", labelBytes: fmt.Sprint(mib << 20)}}
	}
	used := func(key string, age time.Duration) {
		name := "mcp-pkgs-" + key + "-used-x"
		eng.vols[name] = engine.VolumeInfo{Name: name, Created: now.Add(-age), Labels: map[string]string{engine.LabelPackages: key, labelRole: "used"}}
	}
	add("oldest", 300, 5*time.Hour)
	used("oldest", 10*time.Minute)
	add("old-in-use", 300, 4*time.Hour)
	add("middle", 300, 3*time.Hour)
	used("middle", 150*time.Minute)
	add("newer", 300, 2*time.Hour)
	add("just-installed", 300, time.Hour)
	eng.inUse["mcp-pkgs-old-in-use"] = true
	s := newTestStore(t, eng, "numpy")
	s.opts.Packages.CacheMaxBytes = 1000 << 20 // 1,500 MiB held: 500 too many
	s.evict(context.Background(), eng, "just-installed")
	var left []string
	for name := range eng.vols {
		if !strings.HasSuffix(name, "-ok") && !strings.Contains(name, "-used-") {
			left = append(left, strings.TrimPrefix(name, "mcp-pkgs-"))
		}
	}
	slices.Sort(left)
	if strings.Join(left, " ") != "just-installed old-in-use oldest" {
		t.Fatalf("sets left: %q", left)
	}
	for _, gone := range []string{"mcp-pkgs-middle-ok", "mcp-pkgs-middle-used-x", "mcp-pkgs-newer-ok"} {
		if _, ok := eng.vols[gone]; ok {
			t.Errorf("%s stayed after its set went", gone)
		}
	}
}

// TestTouch: using a set records the day, once, replacing the day before.
func TestTouch(t *testing.T) {
	eng := &fakeVolumes{vols: map[string]engine.VolumeInfo{}, imageID: "sha256:aaa"}
	s := newTestStore(t, eng, "numpy")
	s.clock = func() time.Time { return time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC) }
	key := s.key("sha256:aaa")
	_, marker := volumeNames(key)
	eng.vols[marker] = engine.VolumeInfo{Name: marker, Labels: map[string]string{engine.LabelPackages: key, labelRole: "marker", labelSite: "site-0123456789abcdef"}}
	yesterday := "mcp-pkgs-" + key + "-used-20261125"
	eng.vols[yesterday] = engine.VolumeInfo{Name: yesterday, Labels: map[string]string{engine.LabelPackages: key, labelRole: "used"}}
	if _, err := s.Ensure(context.Background(), "img"); err != nil {
		t.Fatal(err)
	}
	if _, ok := eng.vols["mcp-pkgs-"+key+"-used-20261126"]; !ok {
		t.Error("today's use was not recorded")
	}
	if _, ok := eng.vols[yesterday]; ok {
		t.Error("yesterday's record stayed")
	}
}

// TestLockWaitsForAnotherInstall: while another bridge holds the set's
// lock, Ensure waits and takes the set that install marks, starting no
// installer; a lock older than an install may take is removed, and the
// install goes on (and unlocks when it ends).
func TestLockWaitsForAnotherInstall(t *testing.T) {
	defer func(p time.Duration) { lockPoll = p }(lockPoll)
	lockPoll = 5 * time.Millisecond
	eng := &fakeVolumes{vols: map[string]engine.VolumeInfo{}, imageID: "sha256:aaa"}
	s := newTestStore(t, eng, "numpy")
	s.opts.Packages.PipWheel = writeTempWheel(t)
	now := time.Unix(1_800_000_000, 0)
	s.clock = func() time.Time { return now }
	key := s.key("sha256:aaa")
	lock := "mcp-pkgs-" + key + "-lock"
	eng.vols[lock] = engine.VolumeInfo{Name: lock, Created: now, Labels: map[string]string{engine.LabelPackages: key, labelOwner: "another bridge"}}
	done := make(chan error, 1)
	var got *Ready
	go func() {
		r, err := s.Ensure(context.Background(), "img")
		got = r
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	_, marker := volumeNames(key)
	eng.mu.Lock()
	eng.vols[marker] = engine.VolumeInfo{Name: marker, Labels: map[string]string{labelSite: "site-0123456789abcdef"}}
	eng.mu.Unlock()
	select {
	case err := <-done:
		if err != nil || got == nil || got.Dir != "/opt/mcp-packages/site-0123456789abcdef" || eng.starts != 0 {
			t.Fatalf("Ensure: %+v, %v, %d installers started", got, err, eng.starts)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Ensure did not return once the other install marked the set")
	}

	// A stale lock: removed, the install runs (and fails here), the lock goes.
	eng2 := &fakeVolumes{vols: map[string]engine.VolumeInfo{}, imageID: "sha256:aaa"}
	s2 := newTestStore(t, eng2, "numpy")
	s2.opts.Packages.PipWheel = s.opts.Packages.PipWheel
	s2.clock = s.clock
	eng2.vols[lock] = engine.VolumeInfo{Name: lock, Created: now.Add(-installTimeout - time.Minute), Labels: map[string]string{labelOwner: "a crashed bridge"}}
	if _, err := s2.Ensure(context.Background(), "img"); !errors.Is(err, ErrInstall) || eng2.starts == 0 {
		t.Fatalf("after a stale lock: %v, %d installers started", err, eng2.starts)
	}
	if _, ok := eng2.vols[lock]; ok {
		t.Error("the lock stayed after the install ended")
	}
}

// writeTempWheel writes a stand-in pip wheel and returns its path.
func writeTempWheel(t *testing.T) string {
	p := t.TempDir() + "/pip-23.0.1-py3-none-any.whl"
	if err := os.WriteFile(p, []byte("PK"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A closer is an Installer that closes every connection.
type closer struct{}

func (closer) Serve(c net.Conn) { c.Close() }
