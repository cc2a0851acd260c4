package entrypoint

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The fast lane (MCP_BRIDGE_FAST_LANE; PROTOCOL.md, The fast lane): a Unix
// socket of the bridge in a directory of its own per sandbox, bind-mounted
// read-only into it, that carries the frames instead of the engine's
// attached stream once the runtime connected and authenticated.
const (
	// frameLane offers the lane (host → sandbox, on the stream, with the
	// socket's path and the token) and answers the offer or reports a
	// lane that broke (sandbox → host, on the stream).
	frameLane = "lane"
	// laneSocket is the socket's name in its directory.
	laneSocket = "sock"
	// laneTokenBytes is the size of a lane's secret; the runtime sends it
	// hex-encoded, then a newline, as the first bytes on the socket.
	laneTokenBytes = 32
	// laneAnswerTimeout bounds the wait for the runtime's answer to the
	// offer and for its authenticated connection.
	laneAnswerTimeout = 5 * time.Second
	// laneFallbackTimeout bounds the wait, after a lane broke, for the
	// runtime's report on the stream; a runtime that sends none is
	// stopped, as one that breaks the protocol is.
	laneFallbackTimeout = 10 * time.Second
	// maxLaneQueue bounds the bytes held for the sandbox between a break
	// and the runtime's report.
	maxLaneQueue = 64 << 20
)

// ErrLaneBroken is the notice of a call during which the fast lane broke
// and frames were lost on it: the call was interrupted; the sandbox and
// the session's state are kept, and frames travel the stream from then on.
var ErrLaneBroken = errors.New("the fast lane to the sandbox broke during the call")

// ErrLaneUnsupported is NewLanes' error off Linux, where no engine shares
// a Unix socket with the bridge.
var ErrLaneUnsupported = errors.New("the fast lane (MCP_BRIDGE_FAST_LANE) needs a local engine on Linux")

// A Lanes gives the sandboxes of one bridge their fast lanes: it owns the
// directory their sockets are made in and learns, from the first sandbox
// of each engine, whether that engine's sandboxes reach them (a bridge in
// a container, a remote engine, Kubernetes or gVisor without host sockets
// do not: their sandboxes find no socket, and the frames stay on the
// stream). A nil *Lanes gives no lanes. Its methods are safe for
// concurrent use.
type Lanes struct {
	dir string
	log *slog.Logger

	mu      sync.Mutex
	engines map[string]laneState // by engine name ("": the only one)
}

// A laneState is what a bridge knows of one engine's lanes.
type laneState struct {
	works bool   // a sandbox connected and authenticated
	why   string // else why the last offer failed ("": none made yet)
}

// LaneStatus is what Lanes.Status says of one engine.
type LaneStatus struct {
	// Path is "lane" (the frames travel the fast lane), "stream" (its
	// probe failed: they travel the engine's stream) or "untried" (no
	// sandbox of it started yet).
	Path string `json:"path"`
	// Why says why the probe failed, for "stream".
	Why string `json:"why,omitempty"`
}

// NewLanes makes the directory of a bridge's lanes under root, which it
// creates with mode 0700 (other users of the host cannot reach a socket
// in it) and which must be the bridge user's own; directories of
// bridges no longer running are removed. root "" is DefaultLaneRoot().
func NewLanes(root string, log *slog.Logger) (*Lanes, error) {
	if !laneSupported {
		return nil, ErrLaneUnsupported
	}
	if root == "" {
		root = DefaultLaneRoot()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	root, err := privateDir(root)
	if err != nil {
		return nil, fmt.Errorf("making the fast lanes' directory: %w", err)
	}
	sweepLanes(root, log)
	dir := filepath.Join(root, strconv.Itoa(os.Getpid())+"-"+rand.Text()[:8])
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making the fast lanes' directory: %w", err)
	}
	return &Lanes{dir: dir, log: log, engines: map[string]laneState{}}, nil
}

// DefaultLaneRoot is where lanes are made when no root is given:
// /run/mcp-bridge/lanes for root, else $XDG_RUNTIME_DIR/mcp-bridge/lanes,
// else mcp-bridge-lanes-UID in the temporary directory.
func DefaultLaneRoot() string {
	if os.Geteuid() == 0 {
		return "/run/mcp-bridge/lanes"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "mcp-bridge", "lanes")
	}
	return filepath.Join(os.TempDir(), "mcp-bridge-lanes-"+strconv.Itoa(os.Geteuid()))
}

// privateDir makes dir (and its parents) and checks that it is a
// directory, not a link, owned by this process's user, with mode 0700,
// and that no other user can replace it: every directory above it (links
// resolved) is root's or this user's, and writable by no one else unless
// sticky. It returns dir with its parent's links resolved.
func privateDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(filepath.Clean(dir)))
	if err != nil {
		return "", err
	}
	dir = filepath.Join(parent, filepath.Base(dir))
	for p := parent; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || !fi.IsDir() || st.Uid != 0 && int(st.Uid) != os.Geteuid() ||
			fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
			return "", fmt.Errorf("%s, above %s, may be changed by another user", p, dir)
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() {
		return "", fmt.Errorf("%s is not a directory of user %d", dir, os.Geteuid())
	}
	return dir, os.Chmod(dir, 0o700)
}

// sweepLanes removes the directories of bridges whose process is gone
// (named PID-RANDOM); a live bridge's are kept.
func sweepLanes(root string, log *slog.Logger) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, _, ok := strings.Cut(e.Name(), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 || syscall.Kill(n, 0) != syscall.ESRCH {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			log.Warn("removing a gone bridge's fast lanes", "dir", e.Name(), "err", err)
		}
	}
}

// Dir is the directory of this bridge's lanes.
func (l *Lanes) Dir() string { return l.dir }

// Status says, for each engine a sandbox started on, which path its
// frames take.
func (l *Lanes) Status() map[string]LaneStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]LaneStatus{}
	for name, st := range l.engines {
		switch {
		case st.works:
			out[name] = LaneStatus{Path: "lane"}
		case st.why != "":
			out[name] = LaneStatus{Path: "stream", Why: st.why}
		}
	}
	return out
}

// failed reports whether an offer to engine's sandboxes failed before.
func (l *Lanes) failed(engineName string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.engines[engineName]
	return !st.works && st.why != ""
}

// learn records how an offer to engine's sandbox went (err nil: it
// works); a failure is logged once per engine.
func (l *Lanes) learn(engineName string, err error) {
	l.mu.Lock()
	prev := l.engines[engineName]
	if err == nil {
		l.engines[engineName] = laneState{works: true}
	} else if !prev.works {
		l.engines[engineName] = laneState{why: err.Error()}
	}
	l.mu.Unlock()
	if err != nil && prev.why == "" {
		l.log.Warn("no fast lane: the frames travel the engine's stream", "engine", engineName, "why", err)
	}
}

// A lane is one sandbox's fast lane: its directory, its listener until
// the runtime connected, and then that one connection.
type lane struct {
	dir   string
	ln    *net.UnixListener
	token string // hex

	accepted chan laneConn // the authenticated connection, or why none came
	once     sync.Once
}

// A laneConn is what accepting a lane gave.
type laneConn struct {
	conn *net.UnixConn
	err  error
}

// open makes a lane's directory and socket and waits, on a goroutine, for
// the one connection it accepts.
func (l *Lanes) open() (*lane, error) {
	dir, err := os.MkdirTemp(l.dir, "sb-")
	if err != nil {
		return nil, fmt.Errorf("making a fast lane: %w", err)
	}
	// The sandbox user (another UID) needs to reach the socket in it; the
	// bridge's 0700 directory above keeps the host's other users out.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("making a fast lane: %w", err)
	}
	path := filepath.Join(dir, laneSocket)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err == nil {
		err = os.Chmod(path, 0o666)
	}
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		os.RemoveAll(dir)
		return nil, fmt.Errorf("making a fast lane: %w", err)
	}
	token := make([]byte, laneTokenBytes)
	rand.Read(token)
	ln.SetUnlinkOnClose(true)
	lane := &lane{dir: dir, ln: ln, token: hex.EncodeToString(token), accepted: make(chan laneConn, 1)}
	go lane.accept()
	return lane, nil
}

// accept takes the first connection to the lane's socket, closes the
// listener (the socket file goes with it: no second connection can be
// made) and checks the token the connection begins with.
func (ln *lane) accept() {
	ln.ln.SetDeadline(time.Now().Add(laneAnswerTimeout + time.Second))
	c, err := ln.ln.AcceptUnix()
	ln.ln.Close()
	if err != nil {
		ln.accepted <- laneConn{err: fmt.Errorf("no connection came: %w", err)}
		return
	}
	c.SetReadDeadline(time.Now().Add(laneAnswerTimeout))
	got := make([]byte, 2*laneTokenBytes+1)
	_, err = io.ReadFull(c, got)
	c.SetReadDeadline(time.Time{})
	if err != nil || got[len(got)-1] != '\n' || subtle.ConstantTimeCompare(got[:len(got)-1], []byte(ln.token)) != 1 {
		c.Close()
		ln.accepted <- laneConn{err: errors.New("the first connection to the lane did not authenticate")}
		return
	}
	ln.accepted <- laneConn{conn: c}
}

// close ends the lane: its listener, whatever it accepted (unless taken),
// and its directory.
func (ln *lane) close() {
	ln.once.Do(func() {
		ln.ln.Close()
		select {
		case a := <-ln.accepted:
			if a.conn != nil {
				a.conn.Close()
			}
		default:
		}
		os.RemoveAll(ln.dir)
	})
}

// laneOffer is the host's lane frame.
type laneOffer struct {
	T     string `json:"t"`
	Path  string `json:"path"`
	Token string `json:"token"`
}

// A laneReport is the runtime's lane frame: its answer to the offer, or
// the report of a lane that broke (Broke), with the bytes of whole frames
// it wrote to the lane and read from it.
type laneReport struct {
	OK    bool
	Broke bool
	Error string
	Wrote int64
	Read  int64
}

// allFailed reports whether every engine tried so far failed to reach a
// lane (and one was tried).
func (l *Lanes) allFailed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.engines) == 0 {
		return false
	}
	for _, st := range l.engines {
		if st.works {
			return false
		}
	}
	return true
}

// Close removes the directory of the bridge's lanes; sandboxes still
// running keep what they mounted. A nil *Lanes does nothing.
func (l *Lanes) Close() error {
	if l == nil {
		return nil
	}
	return os.RemoveAll(l.dir)
}
