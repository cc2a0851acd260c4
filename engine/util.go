package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
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
)

// dialFailed reports whether err is a failure to connect to the engine's
// API (its daemon stopped, restarting, or never there), not an answer.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
