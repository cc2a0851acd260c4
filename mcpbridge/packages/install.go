package packages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// installCode runs pip in the installer container and prints an
// installResult: %[1]s is the install directory, %[2]s pip's arguments
// (a JSON list), %[3]d the seconds pip may take.
const installCode = `import json, os, subprocess, sys
site = %[1]q
env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
try:
    p = subprocess.run([sys.executable] + %[2]s, capture_output=True, text=True, env=env, timeout=%[3]d)
    rc, out, err = p.returncode, p.stdout, p.stderr
except subprocess.TimeoutExpired:
    rc, out, err = -1, "", "ERROR: pip did not finish within %[3]d s"
size = 0
for root, _, files in os.walk(site):
    for f in files:
        try:
            size += os.lstat(os.path.join(root, f)).st_size
        except OSError:
            pass
print(json.dumps({"rc": rc, "stdout": out[-8000:], "stderr": err[-8000:], "bytes": size, "python": sys.version.split()[0]}))`

// install installs the set key for image into its data volume, in a
// directory of its own, with pip run from the configured wheel in an
// installer container with the sandboxes' hardening whose only network
// is the gateway, limited to the index hosts; then it makes the marker
// volume, naming that directory unless another install's marker came
// first, and returns the set the marker names.
func (s *Store) install(ctx context.Context, vols engine.Volumes, key, image string) (*Ready, error) {
	o := s.opts.Packages
	wheelName, wheel, err := o.ReadWheel()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInstall, err)
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
	spec.InBytes = int64(len(wheel)) + 1<<20
	box := entrypoint.New(s.opts.Engine, &entrypoint.Options{Spec: spec, Logger: s.log, IdleTimeout: -1, Egress: ic.Serve, EgressCA: ca})
	defer box.Close()
	began := s.clock()
	s.log.Info("installing the package set", "key", key, "requirements", len(o.Requirements), "index", o.Index())
	uid, gid := userIDs(spec.User)
	if err := box.CopyIn(ctx, engine.PackagesDir, dirTar(site, uid, gid)); err != nil {
		return nil, fmt.Errorf("%w: making its directory: %v", ErrInstall, err)
	}
	if err := box.CopyIn(ctx, engine.InDir, filesTar(map[string][]byte{wheelName: wheel, "requirements.txt": []byte(o.requirementsText())})); err != nil {
		return nil, fmt.Errorf("%w: delivering pip: %v", ErrInstall, err)
	}
	args, _ := json.Marshal(o.pipArgs(engine.InDir+"/"+wheelName, engine.PackagesDir+"/"+site, engine.InDir+"/requirements.txt"))
	secs := int(installTimeout.Seconds()) - 30
	res, err := box.Execute(ctx, fmt.Sprintf(installCode, engine.PackagesDir+"/"+site, args, secs), installTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInstall, err)
	}
	var r installResult
	if res.Status != entrypoint.StatusSuccess || json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &r) != nil {
		return nil, fmt.Errorf("%w: the installer said %q %s", ErrInstall, cut(res.Stdout+res.Stderr, 300), res.ExceptionMessage)
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
	s.log.Info("installed the package set", "key", key, "python", r.Python, "bytes", r.Bytes, "took", s.clock().Sub(began))
	s.evict(ctx, vols, key)
	return ready, nil
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
