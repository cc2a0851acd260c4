// Package handle mints and checks sandbox handles: the values a bridge
// gives a client under protocol 2026-07-28, which has no sessions, to name
// the sandbox whose Python state its later calls continue.
//
// A handle is a bearer secret, authenticated with an HMAC-SHA256 under a
// key the replicas of one bridge share, so that any of them can check a
// handle another minted and find its sandbox: the handle names the engine
// (an entry of MCP_BRIDGE_ENGINES, "" for the only one) and the container.
// It also carries a tag of the client token it was minted for, so that a
// client with another token cannot use it, and a fingerprint of the key,
// so that a handle minted under another key is told apart from a forged
// one. A handle does not expire by itself: its sandbox does, after the
// idle timeout without a call, and the sandbox keeps the time of its last
// call (see the runtime's protocol).
//
// The text form is "sb1_" followed by the unpadded base64url of the
// binary form:
//
//	version  1 byte   (3; 1 for the handles of earlier bridges)
//	key ID   2 bytes  (a fingerprint of the key)
//	minted   4 bytes  (Unix seconds, big-endian)
//	client   16 bytes (a tag of the client, under the key: its bearer
//	                   token, or the (issuer, subject) of its access
//	                   token; 4 bytes in version 1)
//	engine   1 byte of length, then that many bytes (at most 64)
//	ref      1 byte of length, then that many bytes (at most 128)
//	MAC      16 bytes (HMAC-SHA256 of all the above, truncated)
//
// A container ID of 64 (or 32) hexadecimal digits is stored as the 16
// bytes of its first 32 digits (ref length 16 | 0x80), enough to name it on any
// engine; any other reference (a container or pod name) as its bytes.
package handle

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Prefix begins every handle's text form.
const Prefix = "sb1_"

// MinKeyLen is the shortest key a bridge accepts (MCP_BRIDGE_HANDLE_KEY).
const MinKeyLen = 32

// Bounds of a handle's parts.
const (
	version      = 1
	macLen       = 16
	maxEngineLen = 64
	maxRefLen    = 128
	hexRefFlag   = 0x80 // on ref's length byte: ref is a hex ID's prefix
	hexRefBytes  = 16
)

// Sentinel errors of Check, for errors.Is; each says which check failed.
var (
	// ErrMalformed reports a value that is not a handle: empty, not
	// "sb1_…", not base64url, truncated, padded or with bytes to spare.
	ErrMalformed = errors.New("not a sandbox handle")
	// ErrOtherKey reports a handle minted under another key: by a
	// bridge that does not share this one's MCP_BRIDGE_HANDLE_KEY (or,
	// without one, by another bridge process).
	ErrOtherKey = errors.New("the handle was minted under another key")
	// ErrForged reports a handle whose authentication fails under the
	// key it names: it was altered or made up.
	ErrForged = errors.New("the handle is forged: its authentication does not match")
	// ErrForeign reports a handle minted for another client token.
	ErrForeign = errors.New("the handle was minted for another client")
)

// A Sandbox is what a handle names.
type Sandbox struct {
	// Engine is the entry of MCP_BRIDGE_ENGINES the sandbox runs on; ""
	// when the bridge has one engine.
	Engine string
	// Ref names the container on its engine: its ID (or a unique
	// prefix of it, as Check returns it) or its name.
	Ref string
	// Minted is when the handle was minted, to the second.
	Minted time.Time
}

// A Keyring mints and checks handles under one key.
type Keyring struct {
	mac   []byte // the MAC key, derived from the key
	kid   [2]byte
	token []byte // the key of client-token tags
}

// NewKeyring returns a keyring over key, which must be at least MinKeyLen
// bytes; an empty key stands for a random one, good for this process
// only (its handles cannot be resumed by another).
func NewKeyring(key string) (*Keyring, error) {
	if key == "" {
		key = rand.Text() + rand.Text() // 260 random bits
	} else if len(key) < MinKeyLen {
		return nil, fmt.Errorf("the handle key is %d bytes; it must be at least %d", len(key), MinKeyLen)
	}
	derive := func(label string) []byte {
		h := hmac.New(sha256.New, []byte(key))
		h.Write([]byte("mcp-bridge handle v1: " + label))
		return h.Sum(nil)
	}
	k := &Keyring{mac: derive("mac"), token: derive("token")}
	copy(k.kid[:], derive("key id"))
	return k, nil
}

// KeyID returns the fingerprint of the keyring's key (4 hex digits), to
// tell in logs which key minted a handle; it reveals nothing of the key.
func (k *Keyring) KeyID() string { return hex.EncodeToString(k.kid[:]) }

// tokenTag is the tag of a client under the keyring, n bytes long.
func (k *Keyring) tokenTag(token string, n int) []byte {
	h := hmac.New(sha256.New, k.token)
	h.Write([]byte(token))
	return h.Sum(nil)[:n]
}

// Principal returns the client a handle is bound to for a person: the
// pair (issuer, subject) of an access token, which stays when the token
// is refreshed (a handle bound to the token would not).
func Principal(issuer, subject string) string {
	return "oauth\x00" + issuer + "\x00" + subject
}

// Mint returns the handle of sb for a client with token ("" without
// one), minted now.
func (k *Keyring) Mint(sb Sandbox, token string, now time.Time) (string, error) {
	return k.mint(handleWide, sb, token, now, nil)
}

// A form is the layout of one kind of value a keyring mints: its text
// prefix, its version byte, and the bytes of its own between the token
// tag and the engine (a task's nonce).
type form struct {
	prefix  string
	version byte
	tagLen  int // the client tag's bytes
	extra   int
	what    string // for errors: "handle", "task ID"
}

// head is the length of the form's bytes before the engine's length.
func (f form) head() int { return 7 + f.tagLen + f.extra }

// maxText bounds the form's text: its longest binary form, encoded.
func (f form) maxText() int {
	return len(f.prefix) + (f.head()+1+maxEngineLen+1+maxRefLen+macLen)*4/3 + 4
}

// The forms of handles: wide (a 16-byte client tag), what Mint makes;
// narrow, what earlier bridges made, still checked.
var (
	handleWide   = form{prefix: Prefix, version: 3, tagLen: 16, what: "handle"}
	handleNarrow = form{prefix: Prefix, version: version, tagLen: 4, what: "handle"}
)

// mint returns the text of form f naming sb, for token, at now, with
// extra (f.extra bytes) after the token tag.
func (k *Keyring) mint(f form, sb Sandbox, token string, now time.Time, extra []byte) (string, error) {
	if len(sb.Engine) > maxEngineLen {
		return "", fmt.Errorf("minting a %s: the engine name is %d bytes, over %d", f.what, len(sb.Engine), maxEngineLen)
	}
	ref, flag := []byte(sb.Ref), byte(0)
	if isHexID(sb.Ref) {
		ref, _ = hex.DecodeString(sb.Ref[:2*hexRefBytes])
		flag = hexRefFlag
	}
	if len(ref) == 0 || len(ref) > maxRefLen {
		return "", fmt.Errorf("minting a %s: the container reference is %d bytes; it must be 1 to %d", f.what, len(ref), maxRefLen)
	}
	b := make([]byte, 0, f.head()+2+len(sb.Engine)+len(ref)+macLen)
	b = append(b, f.version, k.kid[0], k.kid[1])
	b = binary.BigEndian.AppendUint32(b, uint32(now.Unix()))
	b = append(b, k.tokenTag(token, f.tagLen)...)
	b = append(b, extra...)
	b = append(b, byte(len(sb.Engine)))
	b = append(b, sb.Engine...)
	b = append(b, byte(len(ref))|flag)
	b = append(b, ref...)
	b = append(b, k.sum(b)...)
	return f.prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

func (k *Keyring) sum(b []byte) []byte {
	h := hmac.New(sha256.New, k.mac)
	h.Write(b)
	return h.Sum(nil)[:macLen]
}

// Check returns the sandbox that handle names, when the keyring minted it
// for a client with token; else an error wrapping ErrMalformed,
// ErrOtherKey, ErrForged or ErrForeign, in the order they are checked.
func (k *Keyring) Check(h, token string) (Sandbox, error) {
	sb, _, err := k.check(h, token, handleWide, handleNarrow)
	return sb, err
}

// check is Check for the forms a value may have (the first one's errors
// are reported when it has none of them); it returns the form's extra
// bytes too.
func (k *Keyring) check(h, token string, forms ...form) (Sandbox, []byte, error) {
	var f form
	var b []byte
	var err error
	for i, g := range forms {
		var e error
		if b, e = decode(g, h); e == nil {
			f, err = g, nil
			break
		}
		if i == 0 {
			err = e
		}
	}
	if err != nil {
		return Sandbox{}, nil, err
	}
	body, mac := b[:len(b)-macLen], b[len(b)-macLen:]
	if [2]byte(body[1:3]) != k.kid {
		return Sandbox{}, nil, ErrOtherKey
	}
	if !hmac.Equal(mac, k.sum(body)) {
		return Sandbox{}, nil, ErrForged
	}
	if !hmac.Equal(body[7:7+f.tagLen], k.tokenTag(token, f.tagLen)) {
		return Sandbox{}, nil, ErrForeign
	}
	sb := Sandbox{Minted: time.Unix(int64(binary.BigEndian.Uint32(body[3:7])), 0)}
	at := f.head()
	n := int(body[at])
	sb.Engine = string(body[at+1 : at+1+n])
	rest := body[at+1+n:]
	if rest[0]&hexRefFlag != 0 {
		sb.Ref = hex.EncodeToString(rest[1:])
	} else {
		sb.Ref = string(rest[1:])
	}
	return sb, body[7+f.tagLen : at], nil
}

// Tag returns an authentication tag of parts under the keyring (22
// base64url characters, 128 bits): what another replica checks, with
// CheckTag, to trust a value this one made, such as a request state.
func (k *Keyring) Tag(parts ...string) string {
	h := hmac.New(sha256.New, k.mac)
	for _, p := range parts {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// CheckTag reports whether tag is Tag of parts under the keyring.
func (k *Keyring) CheckTag(tag string, parts ...string) bool {
	return hmac.Equal([]byte(tag), []byte(k.Tag(parts...)))
}

// decode returns the binary form of h, a text of form f, checked for its
// structure (the lengths add up, nothing to spare), or an error wrapping
// ErrMalformed.
func decode(f form, h string) ([]byte, error) {
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrMalformed, why) }
	switch {
	case h == "":
		return nil, bad("it is empty")
	case len(h) > f.maxText():
		return nil, bad(fmt.Sprintf("it is %d characters, longer than any %s", len(h), f.what))
	case !strings.HasPrefix(h, f.prefix):
		return nil, bad(fmt.Sprintf("a %s begins with %q", f.what, f.prefix))
	case strings.ContainsAny(h, "\r\n"):
		// The base64 decoder skips line breaks, even Strict: without
		// this, one handle would have many spellings.
		return nil, bad("it holds a line break")
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(h[len(f.prefix):])
	if err != nil {
		return nil, bad("it is not unpadded base64url (truncated, padded or altered)")
	}
	at := f.head()
	if len(b) < at+2+1+macLen || b[0] != f.version {
		return nil, bad("it is truncated or of an unknown version")
	}
	n := int(b[at])
	if n > maxEngineLen || at+1+n >= len(b)-macLen {
		return nil, bad("it is truncated")
	}
	refByte := b[at+1+n]
	refLen := int(refByte &^ hexRefFlag)
	if refLen == 0 || refLen > maxRefLen || (refByte&hexRefFlag != 0 && refLen != hexRefBytes) {
		return nil, bad("its container reference is malformed")
	}
	if want := at + 1 + n + 1 + refLen + macLen; len(b) != want {
		return nil, bad(fmt.Sprintf("it is %d bytes where its lengths say %d (truncated or padded)", len(b), want))
	}
	return b, nil
}

// isHexID reports whether ref is an engine's container ID, or the prefix
// of one a handle keeps: 64 or 32 lower-case hexadecimal digits.
// NamedRef returns ref as a handle names it, which is what Check returns:
// an engine's 64-digit hex container ID shortened to its first 32 digits
// (still a unique prefix for the engine); any other reference unchanged.
// A value tagged with a sandbox's reference on one replica and checked on
// another is tagged with this one.
func NamedRef(ref string) string {
	if isHexID(ref) {
		return ref[:2*hexRefBytes]
	}
	return ref
}

func isHexID(ref string) bool {
	if len(ref) != 64 && len(ref) != 2*hexRefBytes {
		return false
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Redact returns what a log may show of a handle: its prefix and the last
// characters of its MAC, which tell handles apart and are never enough to
// use or forge one.
func Redact(h string) string {
	const shown = 6
	if len(h) < len(Prefix)+macLen {
		return Prefix + "…"
	}
	return Prefix + "…" + h[len(h)-shown:]
}
