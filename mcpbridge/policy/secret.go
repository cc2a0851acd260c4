package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
)

// A Secret is a value that is never printed: String, GoString, Format,
// MarshalJSON, MarshalText and LogValue all give "[redacted]". Reveal
// gives the value. It holds the value behind a pointer, so that even
// printing a struct that holds a Secret in an unexported field shows an
// address, not the value.
type Secret struct{ p *string }

const redacted = "[redacted]"

// NewSecret returns a Secret holding v.
func NewSecret(v string) Secret { return Secret{&v} }

// Reveal returns the value.
func (s Secret) Reveal() string {
	if s.p == nil {
		return ""
	}
	return *s.p
}

// String returns "[redacted]".
func (s Secret) String() string { return redacted }

// GoString returns "[redacted]".
func (s Secret) GoString() string { return redacted }

// Format writes "[redacted]" whatever the verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// MarshalJSON returns "[redacted]" as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText returns "[redacted]".
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// LogValue returns "[redacted]" for log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// UnmarshalJSON reads a JSON string.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return errors.New("want a string")
	}
	s.p = &v
	return nil
}
