package handle

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTaskIDs(t *testing.T) {
	k, err := NewKeyring(strings.Repeat("k", MinKeyLen))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewKeyring(strings.Repeat("o", MinKeyLen))
	now := time.Unix(1_800_000_000, 0)
	sb := Sandbox{Engine: "docker", Ref: strings.Repeat("ab", 32)}
	id, task, err := k.MintTask(sb, "token-a", now)
	if err != nil {
		t.Fatal(err)
	}
	id2, task2, _ := k.MintTask(sb, "token-a", now)
	if id == id2 || task.Nonce == task2.Nonce || len(task.Nonce) != 2*nonceLen {
		t.Fatalf("two task IDs of one sandbox and second are not distinct: %s %s", id, id2)
	}
	if !strings.HasPrefix(id, TaskPrefix) || len(id) > taskWide.maxText() {
		t.Fatalf("task ID %q", id)
	}
	got, err := k.CheckTask(id, "token-a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Engine != "docker" || got.Ref != strings.Repeat("ab", 16) || got.Nonce != task.Nonce || !got.Minted.Equal(now) {
		t.Fatalf("checked %+v, minted %+v", got, task)
	}
	h, _ := k.Mint(sb, "token-a", now)
	// A bit of the bytes flipped (a character flipped might leave the
	// base64url alphabet, which is another refusal).
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(id, TaskPrefix))
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-8] ^= 1
	flip := TaskPrefix + base64.RawURLEncoding.EncodeToString(raw)
	for _, tc := range []struct {
		name, id, token string
		want            error
	}{
		{"empty", "", "token-a", ErrMalformed},
		{"a handle", h, "token-a", ErrMalformed},
		{"truncated", id[:len(id)-3], "token-a", ErrMalformed},
		{"another token", id, "token-b", ErrForeign},
		{"altered", flip, "token-a", ErrForged},
	} {
		if _, err := k.CheckTask(tc.id, tc.token); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := other.CheckTask(id, "token-a"); !errors.Is(err, ErrOtherKey) {
		t.Errorf("under another key: %v", err)
	}
	if _, err := k.Check(id, "token-a"); !errors.Is(err, ErrMalformed) {
		t.Errorf("a task ID checked as a handle: %v", err)
	}
	if r := RedactTask(id); strings.Contains(r, id[4:20]) || !strings.HasSuffix(id, strings.TrimPrefix(r, TaskPrefix+"…")) {
		t.Errorf("redacted %q", r)
	}
}
