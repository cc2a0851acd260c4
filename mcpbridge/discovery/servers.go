package discovery

import (
	"os"
	"slices"
)

// Servers returns every discovered server, first definition of a name
// winning, in discovery order, as the last look found them when it was
// less than Options.Recheck ago.
func (r *Registry) Servers() []Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if !r.lastAt.IsZero() && now.Sub(r.lastAt) < r.opts.Recheck && now.Sub(r.lastAt) >= 0 {
		return slices.Clone(r.last)
	}
	out := r.look()
	r.last, r.lastAt = out, now
	return slices.Clone(out)
}

// look reads every location (from the cache of files that did not
// change); r.mu is held.
func (r *Registry) look() []Server {
	allowSelf := r.opts.AllowSelf
	seen := map[string]bool{}
	var out []Server
	for _, src := range r.opts.sources() {
		for _, path := range r.expand(src) {
			for _, sc := range r.read(path, src.project) {
				if seen[sc.Name] {
					continue
				}
				if !allowSelf && r.isSelf(sc) {
					r.log.Info("skipping an MCP server entry that would start this bridge", "server", sc.Name, "source", path,
						"hint", "MCP_BRIDGE_ALLOW_SELF_SERVER=1 allows it")
					continue
				}
				seen[sc.Name] = true
				out = append(out, sc)
			}
		}
	}
	return out
}

// Lookup returns the server called name.
func (r *Registry) Lookup(name string) (Server, bool) {
	for _, sc := range r.Servers() {
		if sc.Name == name {
			return sc, true
		}
	}
	return Server{}, false
}

// read returns the servers defined in path, from the cache when the file
// did not change. Missing files give nothing; malformed ones are logged.
func (r *Registry) read(path string, project bool) []Server {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		delete(r.files, path)
		return nil
	}
	if c, ok := r.files[path]; ok && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) {
		return c.servers
	}
	servers, err := r.parseFile(path, fi.Size(), project, r.logEntry(path))
	if err != nil {
		r.log.Warn("skipping an MCP configuration file", "path", path, "err", err)
	}
	r.files[path] = cachedFile{size: fi.Size(), mtime: fi.ModTime(), servers: servers}
	return servers
}
