package handle

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// TaskPrefix begins every task ID's text form.
const TaskPrefix = "tk1_"

// taskWide is the layout of a task ID: a handle's, with a random nonce
// of 16 bytes after the client tag and version 4 (2 with a 4-byte tag,
// as earlier bridges made them), under the same MAC. It
// names the sandbox whose task it is, so that any replica finds the
// task's record there; it is bound to the client token as a handle is,
// and it carries no part of the handle's MAC, so that a task ID shown in
// a routing header (Mcp-Name) never lets anyone run code.
var (
	taskWide   = form{prefix: TaskPrefix, version: 4, tagLen: 16, extra: nonceLen, what: "task ID"}
	taskNarrow = form{prefix: TaskPrefix, version: 2, tagLen: 4, extra: nonceLen, what: "task ID"}
)

// nonceLen is the length of a task ID's nonce: 128 random bits.
const nonceLen = 16

// A Task is what a task ID names: the sandbox whose task it is, when the
// task was created (to the second), and the task's nonce (32 hexadecimal
// digits), which names its record in the sandbox.
type Task struct {
	Sandbox
	Nonce string
}

// MintTask returns a new task ID for a task in sb created now by a
// client with token.
func (k *Keyring) MintTask(sb Sandbox, token string, now time.Time) (string, Task, error) {
	nonce := make([]byte, nonceLen)
	rand.Read(nonce)
	id, err := k.mint(taskWide, sb, token, now, nonce)
	if err != nil {
		return "", Task{}, err
	}
	sb.Minted = time.Unix(now.Unix(), 0)
	return id, Task{Sandbox: sb, Nonce: hex.EncodeToString(nonce)}, nil
}

// CheckTask returns the task that id names, when the keyring minted it
// for a client with token; else an error wrapping ErrMalformed,
// ErrOtherKey, ErrForged or ErrForeign, as Check does for handles.
func (k *Keyring) CheckTask(id, token string) (Task, error) {
	sb, nonce, err := k.check(id, token, taskWide, taskNarrow)
	if err != nil {
		return Task{}, err
	}
	if len(nonce) != nonceLen {
		return Task{}, fmt.Errorf("%w: its nonce is %d bytes", ErrMalformed, len(nonce))
	}
	return Task{Sandbox: sb, Nonce: hex.EncodeToString(nonce)}, nil
}

// RedactTask returns what a log may show of a task ID: its prefix and its
// last characters, as Redact for a handle.
func RedactTask(id string) string {
	const shown = 6
	if len(id) < len(TaskPrefix)+macLen {
		return TaskPrefix + "…"
	}
	return TaskPrefix + "…" + id[len(id)-shown:]
}
