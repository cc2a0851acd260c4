package shapes

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/statefile"
)

// An Observed is what one tool's results were seen to be: their shape,
// merged over Calls calls.
type Observed struct {
	Calls int   `json:"calls"`
	Shape *Node `json:"shape"`
}

// A serverFile is the observed shapes of one server's tools, for one
// version of it: a new version starts afresh.
type serverFile struct {
	Server  string               `json:"server"`
	Version string               `json:"version"`
	Tools   map[string]*Observed `json:"tools"`
}

// StoreOptions configure a Store.
type StoreOptions struct {
	// Dir is where the shapes are kept, a file per server (the state
	// directory's "shapes"). Zero: kept in memory only.
	Dir string
	// FlushDelay is how long a change waits before it is written, so
	// that a burst of calls writes once. Zero: one second.
	FlushDelay time.Duration
	// Logger receives reports. Zero: discarded.
	Logger *slog.Logger
}

// maxTools bounds the tools of one server whose shapes are kept.
const maxTools = 1024

// Pacing: the first paceAfter results of a tool (in this process) are
// all observed, then at most one per paceEvery: a shape settles within a
// few calls, and a tool called in a loop costs nothing more.
const (
	paceAfter = 16
	paceEvery = time.Second
)

// A pace is when a tool's results were last observed, and how many were.
type pace struct {
	mu   sync.Mutex
	n    int
	last time.Time
}

// A Store records the shapes of the results of tools that declare no
// output schema, per server, tool and server version, and keeps them in
// files of its directory. Recording takes a result's value and returns at
// once: the walk and the merge run on a goroutine of the Store's, which
// drops what comes while it is behind.
type Store struct {
	opts StoreOptions
	log  *slog.Logger
	jobs chan job
	done chan struct{}
	// sendMu guards jobs' closing: Record holds it to send.
	sendMu  sync.RWMutex
	stopped bool
	paces   sync.Map // server "\x00" tool → *pace
	now     func() time.Time

	mu      sync.Mutex
	servers map[string]*serverFile
	dirty   map[string]bool
	timer   *time.Timer
	closed  bool
}

// A job is one result to record: its structured content, else its
// text (ValueOf).
type job struct {
	server, version, tool string
	structured            any
	text                  string
}

// NewStore returns a Store of opts, its goroutine started; Close stops it.
func NewStore(opts *StoreOptions) *Store {
	s := &Store{opts: *opts, log: opts.Logger, jobs: make(chan job, 64), done: make(chan struct{}),
		servers: map[string]*serverFile{}, dirty: map[string]bool{}, now: time.Now}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.FlushDelay <= 0 {
		s.opts.FlushDelay = time.Second
	}
	go s.run()
	return s
}

// Record records a result of tool of server at version, its structured
// content (which must not change after) or its text (ValueOf), unless
// the tool's results are being paced (paceAfter); it never blocks, and
// leaves the parsing and the walk to the Store's goroutine (a result that
// finds it behind is not recorded). A nil *Store records nothing.
func (s *Store) Record(server, version, tool string, structured any, text string) {
	if s == nil || !s.due(server, tool) {
		return
	}
	s.sendMu.RLock()
	defer s.sendMu.RUnlock()
	if s.stopped {
		return
	}
	select {
	case s.jobs <- job{server, version, tool, structured, text}:
	default:
	}
}

// due reports whether the result of tool of server that just came is
// one to observe (pacing).
func (s *Store) due(server, tool string) bool {
	v, ok := s.paces.Load(server + "\x00" + tool)
	if !ok {
		v, _ = s.paces.LoadOrStore(server+"\x00"+tool, &pace{})
	}
	p := v.(*pace)
	now := s.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n >= paceAfter && now.Sub(p.last) < paceEvery {
		return false
	}
	p.n++
	p.last = now
	return true
}

// run records the jobs until Close.
func (s *Store) run() {
	defer close(s.done)
	for j := range s.jobs {
		s.record(j)
	}
}

func (s *Store) record(j job) {
	v, ok := ValueOf(j.structured, j.text)
	if !ok {
		return
	}
	n := Observe(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.load(j.server)
	if f.Version != j.version {
		f.Version, f.Tools = j.version, map[string]*Observed{}
	}
	o, ok := f.Tools[j.tool]
	if !ok {
		if len(f.Tools) >= maxTools {
			return
		}
		o = &Observed{Shape: &Node{}}
		f.Tools[j.tool] = o
	}
	o.Calls++
	o.Shape.merge(n)
	s.dirty[j.server] = true
	if s.timer == nil && !s.closed {
		s.timer = time.AfterFunc(s.opts.FlushDelay, s.flush)
	}
}

// Get returns the observed shape of tool of server's results, and the
// calls it rests on; ok is false when none was recorded. A nil *Store
// has none.
func (s *Store) Get(server, tool string) (text string, calls int, ok bool) {
	if s == nil {
		return "", 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.load(server).Tools[tool]
	if o == nil || o.Calls == 0 {
		return "", 0, false
	}
	return o.Shape.Text(), o.Calls, true
}

// load returns server's shapes, read from its file the first time.
// s.mu is held.
func (s *Store) load(server string) *serverFile {
	if f, ok := s.servers[server]; ok {
		return f
	}
	f := &serverFile{Server: server, Tools: map[string]*Observed{}}
	if p := s.path(server); p != "" {
		if data, err := os.ReadFile(p); err == nil {
			var read serverFile
			if err := json.Unmarshal(data, &read); err != nil || read.Server != server {
				s.log.Warn("ignoring a file of observed result shapes", "path", p, "err", err)
			} else if read.Tools != nil {
				f = &read
			}
		}
	}
	s.servers[server] = f
	return f
}

// path returns the file of server's shapes, "" when none is kept.
func (s *Store) path(server string) string {
	if s.opts.Dir == "" {
		return ""
	}
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, server)
	if name == "" || name[0] == '.' {
		name = "_" + name
	}
	return filepath.Join(s.opts.Dir, name+".json")
}

// flush writes the files of the servers whose shapes changed.
func (s *Store) flush() {
	s.mu.Lock()
	s.timer = nil
	files := map[string][]byte{}
	for server := range s.dirty {
		if p := s.path(server); p != "" {
			data, err := json.Marshal(s.servers[server])
			if err == nil {
				files[p] = data
			}
		}
	}
	s.dirty = map[string]bool{}
	s.mu.Unlock()
	for p, data := range files {
		if err := statefile.Write(p, data); err != nil {
			s.log.Warn("keeping observed result shapes", "path", p, "err", err)
		}
	}
}

// Close records what was handed to it, writes what changed and stops
// its goroutine. A nil *Store does nothing.
func (s *Store) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.sendMu.Lock()
	s.stopped = true
	close(s.jobs)
	s.sendMu.Unlock()
	<-s.done
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	s.flush()
}
