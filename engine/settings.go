package engine

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"
	"golang.org/x/sys/unix"
)

// Environment variables read by LoadSettings.
const (
	EnvRuntime    = "MCP_BRIDGE_RUNTIME"
	EnvImage      = "MCP_BRIDGE_IMAGE"
	EnvUser       = "MCP_BRIDGE_CONTAINER_USER"
	EnvMemory     = "MCP_BRIDGE_MEMORY"
	EnvPids       = "MCP_BRIDGE_PIDS"
	EnvCPUs       = "MCP_BRIDGE_CPUS"
	EnvOCIRuntime = "MCP_BRIDGE_OCI_RUNTIME"
	EnvIdle       = "MCP_BRIDGE_RUNTIME_IDLE_TIMEOUT"
	EnvMaxOutput  = "MCP_BRIDGE_MAX_OUTPUT"
)

// Defaults of the session settings.
const (
	DefaultIdleTimeout    = 300 * time.Second
	DefaultMaxOutputBytes = 1 << 20
)

// Runtime names accepted in MCP_BRIDGE_RUNTIME.
const (
	RuntimeDocker = "docker"
	RuntimePodman = "podman"
)

// minMemoryBytes is the smallest memory limit engines accept.
const minMemoryBytes = 6 << 20

// Settings are the operator's sandbox settings, read from the environment.
// The zero value is not valid; use LoadSettings.
type Settings struct {
	// Runtime is "docker", "podman", or "" to auto-detect (podman first).
	Runtime string
	// Image is the sandbox image.
	Image string
	// User is "uid:gid", numeric.
	User string
	// MemoryBytes is the memory (and memory+swap) limit.
	MemoryBytes int64
	// PidsLimit caps processes and threads.
	PidsLimit int64
	// NanoCPUs caps CPU time; 0 means no cap.
	NanoCPUs int64
	// OCIRuntime names the engine's OCI runtime to use; "" for its default.
	OCIRuntime string
	// NoFile and NProc are the sandbox rlimits, at or below this
	// process's hard limits.
	NoFile, NProc uint64
	// IdleTimeout stops a session's container after this long without a
	// call; 0 means never.
	IdleTimeout time.Duration
	// MaxOutputBytes caps the output kept per call and stream.
	MaxOutputBytes int
}

// LoadSettings reads the settings from getenv (os.Getenv when nil). Every
// invalid variable is reported, each by name, in one error.
func LoadSettings(getenv func(string) string) (Settings, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	s := Settings{
		Image:          DefaultImage,
		User:           DefaultUser,
		MemoryBytes:    DefaultMemoryBytes,
		PidsLimit:      DefaultPidsLimit,
		NoFile:         capRlimit(unix.RLIMIT_NOFILE, DefaultNoFile),
		NProc:          capRlimit(unix.RLIMIT_NPROC, DefaultNProc),
		IdleTimeout:    DefaultIdleTimeout,
		MaxOutputBytes: DefaultMaxOutputBytes,
	}
	var errs []error
	bad := func(name, val, want string) {
		errs = append(errs, fmt.Errorf("%s=%q: %s", name, val, want))
	}
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }

	switch v := strings.ToLower(get(EnvRuntime)); v {
	case "", "auto":
	case RuntimeDocker, RuntimePodman:
		s.Runtime = v
	default:
		bad(EnvRuntime, v, `want "docker", "podman" or unset (auto-detect)`)
	}
	if v := get(EnvImage); v != "" {
		if strings.ContainsAny(v, " \t\n") {
			bad(EnvImage, v, "want an image reference such as python:3.14-slim")
		} else {
			s.Image = v
		}
	}
	if v := get(EnvUser); v != "" {
		if err := validUser(v); err != nil {
			bad(EnvUser, v, err.Error())
		} else {
			s.User = v
		}
	}
	if v := get(EnvMemory); v != "" {
		n, err := units.RAMInBytes(v)
		switch {
		case err != nil:
			bad(EnvMemory, v, "want a size such as 512m or 1g")
		case n < minMemoryBytes:
			bad(EnvMemory, v, "want at least 6m")
		default:
			s.MemoryBytes = n
		}
	}
	if v := get(EnvPids); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 8 {
			bad(EnvPids, v, "want a whole number of at least 8")
		} else {
			s.PidsLimit = n
		}
	}
	if v := get(EnvCPUs); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0.01 || f > 1024 {
			bad(EnvCPUs, v, "want a number of CPUs such as 1 or 0.5")
		} else {
			s.NanoCPUs = int64(math.Round(f * 1e9))
		}
	}
	if v := get(EnvOCIRuntime); v != "" {
		if strings.ContainsAny(v, " \t\n/") {
			bad(EnvOCIRuntime, v, "want the name of an OCI runtime the engine knows, such as runsc")
		} else {
			s.OCIRuntime = v
		}
	}
	if v := get(EnvIdle); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 365*24*3600 {
			bad(EnvIdle, v, "want whole seconds, such as 300 (0: never stop)")
		} else {
			s.IdleTimeout = time.Duration(n) * time.Second
		}
	}
	if v := get(EnvMaxOutput); v != "" {
		n, err := units.RAMInBytes(v)
		if err != nil || n < 1024 || n > 1<<30 {
			bad(EnvMaxOutput, v, "want a size from 1k to 1g, such as 1m")
		} else {
			s.MaxOutputBytes = int(n)
		}
	}
	if len(errs) > 0 {
		return Settings{}, fmt.Errorf("invalid settings: %w", errors.Join(errs...))
	}
	return s, nil
}

// Spec returns the Spec of a sandbox for session running cmd.
func (s Settings) Spec(session string, cmd []string) Spec {
	return Spec{
		Image:       s.Image,
		Cmd:         cmd,
		User:        s.User,
		MemoryBytes: s.MemoryBytes,
		PidsLimit:   s.PidsLimit,
		NanoCPUs:    s.NanoCPUs,
		NoFile:      s.NoFile,
		NProc:       s.NProc,
		OCIRuntime:  s.OCIRuntime,
		Session:     session,
	}
}

// validUser accepts "uid" or "uid:gid" with numeric, non-root IDs.
func validUser(v string) error {
	uid, gid, hasGID := strings.Cut(v, ":")
	ids := []string{uid}
	if hasGID {
		ids = append(ids, gid)
	}
	for _, id := range ids {
		n, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			return errors.New("want numeric uid:gid such as 65534:65534")
		}
		if n == 0 {
			return errors.New("running the sandbox as root (0) is not allowed")
		}
	}
	return nil
}

// capRlimit returns want, lowered to this process's hard limit of res.
func capRlimit(res int, want uint64) uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(res, &rl); err != nil {
		return want
	}
	return min(want, rl.Max)
}
