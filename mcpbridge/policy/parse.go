package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// parse parses a policy file's content, JSON or (when name ends in
// .toml) TOML. Unknown keys, invalid globs, invalid UTF-8, an empty or
// huge file are errors: a policy is taken whole or not at all. ${NAME}
// in the network section's inject values come from the environment.
func parse(data []byte, name string) (*Policy, error) {
	return parseWith(data, name, os.LookupEnv)
}

// parseWith is parse with the environment given by lookup.
func parseWith(data []byte, name string, lookup func(string) (string, bool)) (*Policy, error) {
	if len(data) > maxPolicyBytes {
		return nil, fmt.Errorf("it is %d bytes; at most %d are read", len(data), maxPolicyBytes)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("it is empty (write {} for a policy that allows everything)")
	}
	if !utf8.Valid(data) {
		return nil, errors.New("it is not valid UTF-8")
	}
	src, isTOML := data, strings.HasSuffix(name, ".toml")
	if isTOML {
		var doc map[string]any
		if err := toml.Unmarshal(data, &doc); err != nil {
			return nil, err
		}
		var err error
		if data, err = json.Marshal(doc); err != nil {
			return nil, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	p := &Policy{}
	if err := dec.Decode(p); err != nil {
		if isTOML {
			return nil, sourcePosition(src, true, err)
		}
		return nil, jsonPosition(data, err)
	}
	if dec.More() {
		return nil, errors.New("it holds more than one JSON value")
	}
	p.source = name
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.NetworkSection != nil {
		n, err := parseNetwork(p.NetworkSection, lookup)
		if err != nil {
			return nil, sourcePosition(src, isTOML, err)
		}
		p.network = n
	}
	return p, nil
}

// jsonPosition adds the line and column to a JSON syntax or type
// error, and to the other errors sourcePosition can place.
func jsonPosition(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return atOffset(data, int(se.Offset), err)
	case errors.As(err, &te) && te.Offset > 0:
		return atOffset(data, int(te.Offset), err)
	}
	return sourcePosition(data, false, err)
}

// atOffset adds to err the line and column of the byte at off of data.
func atOffset(data []byte, off int, err error) error {
	line, col := 1, 1
	for _, c := range data[:max(0, min(off, len(data)))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// sourcePosition adds the line and column of what err is about, when it
// can tell, to an unknown key or an error in the network section; src is
// the file as written (TOML when toml). It finds the place by its text:
// the value as written, else the key, after the first "network".
func sourcePosition(src []byte, toml bool, err error) error {
	var ne *networkError
	if errors.As(err, &ne) {
		base := bytes.Index(src, []byte("network"))
		if base < 0 {
			return err
		}
		if ne.needle != "" {
			for _, q := range []string{strconv.Quote(ne.needle), "'" + ne.needle + "'"} {
				if i := bytes.Index(src[base:], []byte(q)); i >= 0 {
					return atOffset(src, base+i, err)
				}
			}
		}
		if i := keyIndex(src[base:], ne.key, toml); i >= 0 {
			return atOffset(src, base+i, err)
		}
		return err
	}
	msg := err.Error()
	if _, key, ok := strings.Cut(msg, "unknown field "); ok {
		if k, uerr := strconv.Unquote(key); uerr == nil {
			if i := keyIndex(src, k, toml); i >= 0 {
				return atOffset(src, i, err)
			}
		}
	}
	return err
}

// keyIndex finds where key is written as a key in src: "key" in JSON,
// key or "key" followed by =, ] or . in TOML; -1 when it is not.
func keyIndex(src []byte, key string, toml bool) int {
	if !toml {
		return bytes.Index(src, []byte(strconv.Quote(key)))
	}
	for _, k := range []string{strconv.Quote(key), key} {
		for off := 0; ; {
			i := bytes.Index(src[off:], []byte(k))
			if i < 0 {
				break
			}
			at := off + i
			rest := bytes.TrimLeft(src[at+len(k):], " \t")
			before := byte('\n')
			if at > 0 {
				before = src[at-1]
			}
			if len(rest) > 0 && bytes.IndexByte([]byte("=]."), rest[0]) >= 0 && bytes.IndexByte([]byte("\n \t[.{,"), before) >= 0 {
				return at
			}
			off = at + len(k)
		}
	}
	return -1
}

// validate checks the limits and every glob of p.
func (p *Policy) validate() error {
	if len(p.Servers) > maxPolicyServers {
		return fmt.Errorf("servers has %d entries; at most %d are allowed", len(p.Servers), maxPolicyServers)
	}
	if p.MaxToolCalls < 0 {
		return fmt.Errorf("max_tool_calls is %d; want a positive number (0 or absent: %d)", p.MaxToolCalls, defaultMaxToolCalls)
	}
	switch p.ConfirmWithoutElicitation {
	case "", confirmRefuse, confirmAllow:
	default:
		return fmt.Errorf("confirm_without_elicitation is %q; want %q or %q", p.ConfirmWithoutElicitation, confirmRefuse, confirmAllow)
	}
	if err := checkGlobs("redact_keys", p.RedactKeys); err != nil {
		return err
	}
	if err := checkConfirmVia("confirm_via", p.ConfirmVia); err != nil {
		return err
	}
	for key, r := range p.Servers {
		if err := checkGlobs("servers key", []string{key}); err != nil {
			return err
		}
		if r == nil {
			return fmt.Errorf("servers[%q] is null; want an object", key)
		}
		r.key = key
		if err := checkConfirmVia(fmt.Sprintf("servers[%q].confirm_via", key), r.ConfirmVia); err != nil {
			return err
		}
		for list, globs := range map[string][]string{"allow": r.Allow, "deny": r.Deny, "confirm": r.Confirm} {
			if err := checkGlobs(fmt.Sprintf("servers[%q].%s", key, list), globs); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkGlobs checks a list of globs: its length, each one's length and
// syntax (path.Match's: *, ?, [classes], \ escapes).
func checkGlobs(where string, globs []string) error {
	if len(globs) > maxPolicyPatterns {
		return fmt.Errorf("%s has %d globs; at most %d are allowed", where, len(globs), maxPolicyPatterns)
	}
	for _, g := range globs {
		if g == "" || len(g) > maxPatternLen {
			return fmt.Errorf("%s: glob %q: want 1 to %d bytes", where, g, maxPatternLen)
		}
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("%s: glob %q: %w", where, g, err)
		}
	}
	return nil
}
