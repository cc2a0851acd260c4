package handle

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

const (
	testKey  = "0123456789abcdef0123456789abcdef-test"
	otherKey = "fedcba9876543210fedcba9876543210-other"
	dockerID = "3f1c9a7e5b2d4c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60"
)

func mustKeyring(t testing.TB, key string) *Keyring {
	t.Helper()
	k, err := NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRoundTrip(t *testing.T) {
	k := mustKeyring(t, testKey)
	now := time.Unix(1795000000, 0)
	for _, tc := range []struct {
		name    string
		sb      Sandbox
		wantRef string
	}{
		{"docker ID", Sandbox{Ref: dockerID}, dockerID[:32]},
		{"named engine", Sandbox{Engine: "podman@remote", Ref: dockerID}, dockerID[:32]},
		{"pod name", Sandbox{Engine: "kubernetes", Ref: "mcp-sandbox-7"}, "mcp-sandbox-7"},
		{"upper-case hex is a name", Sandbox{Ref: strings.ToUpper(dockerID)}, strings.ToUpper(dockerID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := k.Mint(tc.sb, "token-a", now)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(h, Prefix) || len(h) > handleWide.maxText() {
				t.Fatalf("handle %q", h)
			}
			got, err := k.Check(h, "token-a")
			if err != nil {
				t.Fatalf("Check(%q): %v", h, err)
			}
			if got.Engine != tc.sb.Engine || got.Ref != tc.wantRef || !got.Minted.Equal(now) {
				t.Fatalf("Check = %+v, want engine %q ref %q minted %v", got, tc.sb.Engine, tc.wantRef, now)
			}
			// The same keyring built again (another replica) checks it.
			if _, err := mustKeyring(t, testKey).Check(h, "token-a"); err != nil {
				t.Fatalf("another replica: %v", err)
			}
		})
	}
}

func TestCheckRefuses(t *testing.T) {
	k := mustKeyring(t, testKey)
	h, err := k.Mint(Sandbox{Engine: "docker", Ref: dockerID}, "token-a", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(h, Prefix))
	enc := func(b []byte) string { return Prefix + base64.RawURLEncoding.EncodeToString(b) }
	flip := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		return enc(b)
	}
	other, _ := mustKeyring(t, otherKey).Mint(Sandbox{Engine: "docker", Ref: dockerID}, "token-a", time.Now())
	cases := []struct {
		name, h, token string
		want           error
	}{
		{"empty", "", "token-a", ErrMalformed},
		{"no prefix", strings.TrimPrefix(h, Prefix), "token-a", ErrMalformed},
		{"truncated by a character", h[:len(h)-1], "token-a", ErrMalformed},
		{"truncated by a byte", enc(raw[:len(raw)-1]), "token-a", ErrMalformed},
		{"truncated to its prefix", Prefix, "token-a", ErrMalformed},
		{"padded with =", h + "=", "token-a", ErrMalformed},
		{"padded with a byte", enc(append(append([]byte(nil), raw...), 0)), "token-a", ErrMalformed},
		{"a space", h + " ", "token-a", ErrMalformed},
		{"standard base64", strings.NewReplacer("-", "+", "_", "/").Replace(h) + "+", "token-a", ErrMalformed},
		{"huge", Prefix + strings.Repeat("A", 10000), "token-a", ErrMalformed},
		{"another key", other, "token-a", ErrOtherKey},
		{"another client", h, "token-b", ErrForeign},
		{"no client token", h, "", ErrForeign},
		{"minted time altered", flip(4), "token-a", ErrForged},
		{"token tag altered", flip(8), "token-a", ErrForged},
		{"engine altered", flip(13), "token-a", ErrForged},
		{"container altered", flip(len(raw) - macLen - 1), "token-a", ErrForged},
		{"MAC altered", flip(len(raw) - 1), "token-a", ErrForged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := k.Check(tc.h, tc.token)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Check(%.40q) = %v, want %v", tc.h, err, tc.want)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	if _, err := NewKeyring("short"); err == nil {
		t.Fatal("a 5-byte key was accepted")
	}
	a, b := mustKeyring(t, ""), mustKeyring(t, "")
	if a.KeyID() == b.KeyID() && string(a.mac) == string(b.mac) {
		t.Fatal("two random keys are the same")
	}
	h, err := a.Mint(Sandbox{Ref: dockerID}, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Check(h, ""); err == nil {
		t.Fatal("a handle of one process's random key was accepted by another")
	}
}

func TestMintBounds(t *testing.T) {
	k := mustKeyring(t, testKey)
	for _, sb := range []Sandbox{
		{Ref: ""},
		{Ref: strings.Repeat("n", maxRefLen+1)},
		{Engine: strings.Repeat("e", maxEngineLen+1), Ref: dockerID},
	} {
		if h, err := k.Mint(sb, "", time.Now()); err == nil {
			t.Errorf("Mint(%+v) = %q, want an error", sb, h)
		}
	}
	h, err := k.Mint(Sandbox{Engine: strings.Repeat("e", maxEngineLen), Ref: strings.Repeat("n", maxRefLen)}, "", time.Now())
	if err != nil || len(h) > handleWide.maxText() {
		t.Fatalf("the longest handle: %d characters (max %d), %v", len(h), handleWide.maxText(), err)
	}
}

func TestRedact(t *testing.T) {
	k := mustKeyring(t, testKey)
	now := time.Now()
	a, _ := k.Mint(Sandbox{Ref: dockerID}, "", now)
	b, _ := k.Mint(Sandbox{Ref: strings.Replace(dockerID, "3f", "40", 1)}, "", now)
	ra, rb := Redact(a), Redact(b)
	if ra == rb || !strings.HasPrefix(ra, Prefix+"…") || len([]rune(ra)) != len(Prefix)+1+6 || !strings.HasSuffix(a, strings.TrimPrefix(ra, Prefix+"…")) {
		t.Fatalf("Redact(%q) = %q, Redact(%q) = %q", a, ra, b, rb)
	}
	if Redact("x") != Prefix+"…" {
		t.Fatalf("Redact of a short value = %q", Redact("x"))
	}
}

func TestTag(t *testing.T) {
	k, other := mustKeyring(t, testKey), mustKeyring(t, otherKey)
	tag := k.Tag("a", "bc")
	if !mustKeyring(t, testKey).CheckTag(tag, "a", "bc") {
		t.Fatal("another replica with the key refuses the tag")
	}
	for _, bad := range [][]string{{"ab", "c"}, {"a", "bd"}, {"a"}} {
		if k.CheckTag(tag, bad...) {
			t.Errorf("the tag of [a bc] checks for %q", bad)
		}
	}
	if other.CheckTag(tag, "a", "bc") || k.CheckTag(tag[:len(tag)-1], "a", "bc") {
		t.Fatal("another key, or a truncated tag, checks")
	}
}

// FuzzCheck: no input makes Check panic, and whatever it accepts is what
// Mint made of it (in its form: a narrow handle of an earlier bridge, a
// wide one of this).
func FuzzCheck(f *testing.F) {
	k := mustKeyring(f, testKey)
	h, _ := k.Mint(Sandbox{Engine: "docker", Ref: dockerID}, "t", time.Now())
	f.Add(h)
	f.Add(Prefix)
	f.Add(Prefix + "AQID")
	f.Fuzz(func(t *testing.T, s string) {
		sb, err := k.Check(s, "t")
		if err != nil {
			return
		}
		fm := handleWide
		if _, err := decode(handleNarrow, s); err == nil {
			fm = handleNarrow // an earlier bridge's, still checked
		}
		again, err := k.mint(fm, sb, "t", sb.Minted, nil)
		if err != nil || again != s {
			t.Fatalf("Check accepted %q as %+v, which mints %q (%v)", s, sb, again, err)
		}
	})
}

// TestNamedRef: NamedRef gives the reference Check returns for a handle
// minted with the reference, whole IDs and names alike (a tag made with
// a sandbox's reference on the minting replica checks on a resuming one).
func TestNamedRef(t *testing.T) {
	k, err := NewKeyring(strings.Repeat("k", MinKeyLen))
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{
		strings.Repeat("0123456789abcdef", 4), // a whole Docker or Podman ID
		strings.Repeat("fedcba98", 4),         // its short form
		"mcp-sandbox-7",                       // a pod's name
		strings.Repeat("A", 64),               // 64 characters, not lower-case hex
	} {
		h, err := k.Mint(Sandbox{Engine: "docker", Ref: ref}, "tok", time.Now())
		if err != nil {
			t.Fatalf("minting %q: %v", ref, err)
		}
		sb, err := k.Check(h, "tok")
		if err != nil {
			t.Fatalf("checking %q: %v", ref, err)
		}
		if got := NamedRef(ref); got != sb.Ref {
			t.Errorf("NamedRef(%q) = %q; the handle names %q", ref, got, sb.Ref)
		}
	}
}

// TestPrincipals: a handle minted for a person is theirs alone: another
// subject of the same issuer, or the same subject of another issuer, or
// a bearer token spelling the pair, gets ErrForeign; the tag is 16
// bytes. Handles of the narrow form earlier bridges minted (a 4-byte
// tag) still check, as task IDs do.
func TestPrincipals(t *testing.T) {
	k := mustKeyring(t, testKey)
	now := time.Unix(1_800_000_000, 0)
	alice := Principal("https://id.example.com", "alice")
	h, err := k.Mint(Sandbox{Ref: dockerID}, alice, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Check(h, alice); err != nil {
		t.Fatalf("alice's own handle: %v", err)
	}
	for _, other := range []string{Principal("https://id.example.com", "bob"), Principal("https://other.example.com", "alice"),
		"https://id.example.com alice", Principal("https://id.example.com\x00alice", "")} {
		if _, err := k.Check(h, other); !errors.Is(err, ErrForeign) {
			t.Errorf("%q: %v, want ErrForeign", other, err)
		}
	}
	old, err := k.mint(handleNarrow, Sandbox{Ref: dockerID}, "token-a", now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sb, err := k.Check(old, "token-a"); err != nil || sb.Ref != dockerID[:32] {
		t.Errorf("a narrow handle: %+v %v", sb, err)
	}
	if _, err := k.Check(old, "token-b"); !errors.Is(err, ErrForeign) {
		t.Errorf("a narrow handle, another token: %v", err)
	}
	oldTask, err := k.mint(taskNarrow, Sandbox{Ref: dockerID}, "token-a", now, make([]byte, nonceLen))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.CheckTask(oldTask, "token-a"); err != nil {
		t.Errorf("a narrow task ID: %v", err)
	}
}
