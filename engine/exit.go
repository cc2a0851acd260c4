package engine

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// An ExitStatus reports how a container ended.
type ExitStatus struct {
	// Code is the main process's exit code; by shell convention 128+n
	// when it was killed by signal n.
	Code int
	// OOMKilled reports that the kernel killed the container for
	// exceeding its memory limit.
	OOMKilled bool
	// MemoryLimit is the container's memory limit in bytes, for reports.
	MemoryLimit int64
	// EngineError is the engine's own error for the container, if any
	// (for example an OCI runtime failure).
	EngineError string
}

// Signal returns the signal that ended the main process, or 0. It uses
// the 128+n convention of init processes and shells.
func (s ExitStatus) Signal() unix.Signal {
	if s.Code > 128 && s.Code < 128+65 {
		return unix.Signal(s.Code - 128)
	}
	return 0
}

// Err returns nil for a clean exit (code 0, not OOM-killed) and an
// *ExitError otherwise.
func (s ExitStatus) Err() error {
	if s.Code == 0 && !s.OOMKilled && s.EngineError == "" {
		return nil
	}
	return &ExitError{Status: s}
}

// String describes the status in words, for logs and error messages.
func (s ExitStatus) String() string {
	var parts []string
	switch {
	case s.OOMKilled && s.MemoryLimit > 0:
		parts = append(parts, fmt.Sprintf("killed for exceeding its memory limit (OOM-killed, limit %s)", FormatBytes(s.MemoryLimit)))
	case s.OOMKilled:
		parts = append(parts, "killed for exceeding its memory limit (OOM-killed)")
	}
	if sig := s.Signal(); sig != 0 {
		parts = append(parts, fmt.Sprintf("killed by signal %s (exit code %d)", unix.SignalName(sig), s.Code))
	} else {
		parts = append(parts, fmt.Sprintf("exited with code %d", s.Code))
	}
	if s.EngineError != "" {
		parts = append(parts, "engine error: "+s.EngineError)
	}
	return strings.Join(parts, "; ")
}

// An ExitError reports a container that did not exit cleanly.
type ExitError struct {
	Status ExitStatus
}

func (e *ExitError) Error() string { return "sandbox container " + e.Status.String() }
