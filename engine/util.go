package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"
)

// loggerOrDiscard returns l, or a logger that discards everything.
func loggerOrDiscard(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// containerName returns a unique, readable container name for session.
func containerName(session string) string {
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

// shortID abbreviates a container ID for logs.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// cleanupContext returns a context for clean-up work that the caller's
// cancellation cannot cut short, bounded by its own timeout.
func cleanupContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), timeout)
}

// Bounds of engine calls made on clean-up paths.
const (
	inspectTimeout = 10 * time.Second
	cleanupTimeout = 20 * time.Second
	// createTimeout bounds creating a container, which its caller's
	// context does not cancel (see containerEngine.start).
	createTimeout = 2 * time.Minute
)

// dialFailed reports whether err is a failure to connect to the engine's
// API (its daemon stopped, restarting, or never there), not an answer.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// FormatBytes returns n bytes written for people, in the largest binary
// unit (KiB, MiB, GiB) it reaches: whole when n is a multiple of the unit,
// else rounded to one decimal. Examples: "1 byte", "12 bytes", "300 KiB",
// "1.5 KiB", "64.0 MiB" (64 MiB and a byte), "2 GiB". A value that would
// round up to 1024.0 of a unit is written as 1.0 of the next.
func FormatBytes(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	units := [...]struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}}
	for _, u := range units {
		unit := int64(1) << u.shift
		if n < unit-unit>>11 { // below what rounds to 1.0 of the unit
			continue
		}
		if n%unit == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + " " + u.name
		}
		return strconv.FormatFloat(float64(n)/float64(unit), 'f', 1, 64) + " " + u.name
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
