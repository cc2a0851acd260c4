package mcpbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/statefile"
)

// Limits of the host-side stores (an entry is a stored memory).
const (
	maxEntryBytes = 1 << 20
	maxEntries    = 1000
	maxSavedTools = 200
	maxToolSource = 256 << 10
)

// validKey is the shape of memory keys and saved tool names: it keeps
// every key a plain file name in its directory.
var validKey = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// A store keeps the memories and saved tools of every session on the host,
// under the state directory, so they outlive sandboxes and bridges and
// need no mount (a remote engine works).
type store struct {
	dir string
	mu  sync.Mutex
	gen atomic.Int64 // counts the tools saved through this store
}

// generation counts the tools saved so far: a session whose interpreter
// defined the tools at an older generation lacks some.
func (s *store) generation() int64 { return s.gen.Load() }

// An entryRecord is one stored memory's file.
type entryRecord struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// An entryInfo describes a stored memory without its value.
type entryInfo struct {
	Key       string          `json:"key"`
	Size      int             `json:"size"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

func (r entryRecord) info() entryInfo {
	return entryInfo{Key: r.Key, Size: len(r.Value), Metadata: r.Metadata, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func checkKey(kind, key string) error {
	if !validKey.MatchString(key) {
		return fmt.Errorf("invalid %s %q: use 1-128 letters, digits, '_', '-' or '.', not starting with '.' or '-'", kind, key)
	}
	return nil
}

func (s *store) entryPath(key string) string { return filepath.Join(s.dir, "memory", key+".json") }

func (s *store) readEntry(key string) (entryRecord, bool, error) {
	data, err := os.ReadFile(s.entryPath(key))
	if errors.Is(err, os.ErrNotExist) {
		return entryRecord{}, false, nil
	}
	if err != nil {
		return entryRecord{}, false, err
	}
	var r entryRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return entryRecord{}, false, fmt.Errorf("memory %q is corrupt: %v", key, err)
	}
	return r, true, nil
}

// entry serves one request of the sandbox's "memory" type, on a stored
// memory (an entry of the store: in Go names, memory is RAM): op is
// save, load, delete, list, update, exists or info.
func (s *store) entry(op, key string, value, metadata json.RawMessage) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op != "list" {
		if err := checkKey("memory key", key); err != nil {
			return nil, err
		}
	}
	switch op {
	case "save", "update":
		if len(value) > maxEntryBytes {
			return nil, fmt.Errorf("memory %q is %d bytes, over the %d-byte limit", key, len(value), maxEntryBytes)
		}
		old, exists, err := s.readEntry(key)
		if err != nil && op == "update" {
			return nil, err
		}
		if op == "update" && !exists {
			return nil, fmt.Errorf("memory %q does not exist", key)
		}
		if !exists {
			if n, _ := s.count("memory", ".json"); n >= maxEntries {
				return nil, fmt.Errorf("%d memories are stored, the limit; delete some first", n)
			}
		}
		now := time.Now().UTC()
		r := entryRecord{Key: key, Value: value, Metadata: metadata, CreatedAt: now, UpdatedAt: now}
		if exists {
			r.CreatedAt = old.CreatedAt
			if len(metadata) == 0 || string(metadata) == "null" {
				r.Metadata = old.Metadata
			}
		}
		data, _ := json.Marshal(r)
		if err := statefile.Write(s.entryPath(key), data); err != nil {
			return nil, fmt.Errorf("saving memory %q: %w", key, err)
		}
		return r.info(), nil
	case "load", "exists", "info":
		r, exists, err := s.readEntry(key)
		if err != nil {
			return nil, err
		}
		switch {
		case op == "exists":
			return exists, nil
		case !exists:
			return nil, nil
		case op == "info":
			return r.info(), nil
		}
		return map[string]any{"value": r.Value}, nil
	case "delete":
		err := os.Remove(s.entryPath(key))
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	case "list":
		return s.names("memory", ".json")
	}
	return nil, fmt.Errorf("unknown memory operation %q", op)
}

func (s *store) names(sub, ext string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, sub))
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ext); ok && e.Type().IsRegular() && validKey.MatchString(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (s *store) count(sub, ext string) (int, error) {
	n, err := s.names(sub, ext)
	return len(n), err
}

// saveTool stores a function's source for every future session.
func (s *store) saveTool(name, source string) error {
	if err := checkKey("tool name", name); err != nil {
		return err
	}
	if len(source) > maxToolSource {
		return fmt.Errorf("tool %q source is %d bytes, over the %d-byte limit", name, len(source), maxToolSource)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := filepath.Join(s.dir, "tools", name+".py")
	if _, err := os.Stat(path); err != nil {
		if n, _ := s.count("tools", ".py"); n >= maxSavedTools {
			return fmt.Errorf("%d tools are saved, the limit", n)
		}
	}
	if err := statefile.Write(path, []byte(source)); err != nil {
		return err
	}
	s.gen.Add(1)
	return nil
}

// toolSources returns the saved tools' sources, by name.
func (s *store) toolSources() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names, _ := s.names("tools", ".py")
	out := map[string]string{}
	for _, n := range names {
		if data, err := os.ReadFile(filepath.Join(s.dir, "tools", n+".py")); err == nil && len(data) <= maxToolSource {
			out[n] = string(data)
		}
	}
	return out
}
