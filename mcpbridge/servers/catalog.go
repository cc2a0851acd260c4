package servers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/statefile"
)

// maxCatalogFile bounds a catalog file read back from disk.
const maxCatalogFile = 8 << 20

// A catalog remembers the tools each configured server listed last,
// whichever instance of it listed them, so that searching and documenting
// the tools of many servers does not start an instance of each in every
// client session. With a directory it is persistent: each server's list
// is also written there, keyed by the server's configuration, and read
// back by a later bridge process, so that a search answers from it at once
// while the server is listed again in the background.
type catalog struct {
	dir string // "": in memory only
	log *slog.Logger

	mu         sync.Mutex
	entries    map[string]catalogEntry
	refreshing map[string]bool // servers being listed again in the background
}

// A catalogEntry is the tools one server listed.
type catalogEntry struct {
	cfg     discovery.Server
	tools   []*mcp.Tool
	version string // the server's serverInfo.version, when it said
	// fresh says an instance listed them in this process; else they
	// were read from the catalog on disk.
	fresh bool
}

// A catalogFile is a catalog entry on disk.
type catalogFile struct {
	Server   string      `json:"server"`
	Config   string      `json:"config"` // configFingerprint of its definition
	Version  string      `json:"version,omitempty"`
	Recorded time.Time   `json:"recorded"`
	Tools    []*mcp.Tool `json:"tools"`
}

// newCatalog returns a catalog kept in dir (none: memory only).
func newCatalog(dir string, log *slog.Logger) *catalog {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &catalog{dir: dir, log: log, entries: map[string]catalogEntry{}, refreshing: map[string]bool{}}
}

// put records the tools an instance of the server cfg listed, and the
// version it reported.
func (c *catalog) put(cfg discovery.Server, tools []*mcp.Tool, version string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.entries[cfg.Name] = catalogEntry{cfg: cfg, tools: tools, version: version, fresh: true}
	c.mu.Unlock()
	c.save(cfg, tools, version)
}

// get returns the tools last listed by the server cfg, if it is still
// defined so: from memory, else from the catalog on disk. stale says they
// were read from disk and no instance listed them in this process yet.
func (c *catalog) get(cfg discovery.Server) (tools []*mcp.Tool, stale, ok bool) {
	if c == nil {
		return nil, false, false
	}
	c.mu.Lock()
	e, ok := c.entries[cfg.Name]
	c.mu.Unlock()
	if ok && sameConfig(e.cfg, cfg) {
		return e.tools, !e.fresh, true
	}
	f, ok := c.load(cfg)
	if !ok {
		return nil, false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[cfg.Name]; ok && e.fresh && sameConfig(e.cfg, cfg) {
		return e.tools, false, true // listed meanwhile
	}
	c.entries[cfg.Name] = catalogEntry{cfg: cfg, tools: f.Tools, version: f.Version}
	return f.Tools, true, true
}

// startRefresh reports whether the caller should list server name again
// in the background: false when a refresh of it is under way. done ends
// the refresh.
func (c *catalog) startRefresh(name string) (start bool, done func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refreshing[name] {
		return false, nil
	}
	c.refreshing[name] = true
	return true, func() {
		c.mu.Lock()
		delete(c.refreshing, name)
		c.mu.Unlock()
	}
}

// path returns the file of server name in the catalog directory: a
// readable prefix of the name and a digest of it, so that any name maps
// to one safe file name.
func (c *catalog) path(name string) string {
	sum := sha256.Sum256([]byte(name))
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
	if len(safe) > 40 {
		safe = safe[:40]
	}
	return filepath.Join(c.dir, safe+"-"+hex.EncodeToString(sum[:6])+".json")
}

// save writes the entry of cfg to disk, atomically (a temporary file
// renamed); a failure is logged, never returned: the catalog is a cache.
func (c *catalog) save(cfg discovery.Server, tools []*mcp.Tool, version string) {
	if c.dir == "" {
		return
	}
	data, err := json.Marshal(catalogFile{Server: cfg.Name, Config: configFingerprint(cfg), Version: version, Recorded: time.Now().UTC(), Tools: tools})
	if err == nil && len(data) > maxCatalogFile {
		err = errors.New("the tool list is larger than a catalog file may be")
	}
	if err == nil {
		err = statefile.Write(c.path(cfg.Name), data)
	}
	if err != nil {
		c.log.Warn("saving a server's tools in the catalog", "server", cfg.Name, "err", err)
	}
}

// load reads the entry of cfg from disk, if one of the same definition is
// there and parses.
func (c *catalog) load(cfg discovery.Server) (catalogFile, bool) {
	var f catalogFile
	if c.dir == "" {
		return f, false
	}
	file, err := os.Open(c.path(cfg.Name))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.log.Warn("reading the catalog", "server", cfg.Name, "err", err)
		}
		return f, false
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxCatalogFile+1))
	if err != nil || len(data) > maxCatalogFile || json.Unmarshal(data, &f) != nil {
		c.log.Warn("ignoring an unreadable catalog file", "server", cfg.Name, "file", file.Name())
		return catalogFile{}, false
	}
	if f.Server != cfg.Name || f.Config != configFingerprint(cfg) {
		return catalogFile{}, false // the server is defined otherwise now
	}
	return f, true
}

// configFingerprint identifies what starts a server: its command, args,
// environment and working directory (not its description or source).
func configFingerprint(cfg discovery.Server) string {
	data, _ := json.Marshal(struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		Cwd     string            `json:"cwd"`
	}{cfg.Command, cfg.Args, cfg.Env, cfg.Cwd})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func sameConfig(a, b discovery.Server) bool {
	if a.Command != b.Command || a.Cwd != b.Cwd || a.Shared != b.Shared || len(a.Args) != len(b.Args) || len(a.Env) != len(b.Env) {
		return false
	}
	for i := range a.Args {
		if a.Args[i] != b.Args[i] {
			return false
		}
	}
	for k, v := range a.Env {
		if b.Env[k] != v {
			return false
		}
	}
	return true
}
