package lifecycle

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"os/user"
	"runtime"
	"strings"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// LoggerOrDiscard returns l, or a logger that discards everything.
func LoggerOrDiscard(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// ContainerName returns a unique, readable container name for session.
func ContainerName(session string) string {
	var b [4]byte
	rand.Read(b[:])
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, session)
	if len(clean) > 40 {
		clean = clean[:40]
	}
	if clean == "" {
		clean = "sandbox"
	}
	return "mcp-sbx-" + clean + "-" + hex.EncodeToString(b[:])
}

// ShortID abbreviates a container ID for logs.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// CleanupContext returns a context for clean-up work that the caller's
// cancellation cannot cut short, bounded by its own timeout.
func CleanupContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), timeout)
}

// Bounds of engine calls made on clean-up paths.
const (
	InspectTimeout = 10 * time.Second
	CleanupTimeout = 20 * time.Second
	// CreateTimeout bounds creating a container, which its caller's
	// context does not cancel (see Engine.start).
	CreateTimeout = 2 * time.Minute
)

// DialFailed reports whether err is a failure to connect to the engine's
// API (its daemon stopped, restarting, or never there), not an answer.
func DialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Trace reports a phase that began at began and ends now.
func Trace(ctx context.Context, name string, began time.Time) {
	engine.TracePhase(ctx, name, time.Since(began))
}

// HomeDir returns the user's home directory as the engines' CLIs find
// it: HOME (USERPROFILE on Windows), else the account's; "" when there is
// none.
func HomeDir(getenv func(string) string) string {
	home := getenv("HOME")
	if runtime.GOOS == "windows" {
		home = getenv("USERPROFILE")
	}
	if home == "" {
		if u, err := user.Current(); err == nil {
			home = u.HomeDir
		}
	}
	return home
}
