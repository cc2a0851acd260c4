package console

import (
	"crypto/rand"
	"crypto/sha256"
	"sync"
	"time"
)

// An opSession is a signed-in operator: the name typed at sign-in, the
// CSRF token of its forms, and when it ends.
type opSession struct {
	name    string
	csrf    string
	expires time.Time
}

// An authStore keeps the signed-in sessions, in memory and bounded, and
// counts wrong tokens per remote address.
type authStore struct {
	ttl      time.Duration
	max      int
	limit    *failureLimit
	mu       sync.Mutex
	sessions map[[sha256.Size]byte]*opSession // by the digest of the id
}

func newAuthStore(ttl time.Duration, max, perMin int) *authStore {
	return &authStore{ttl: ttl, max: max, limit: newFailureLimit(perMin), sessions: map[[sha256.Size]byte]*opSession{}}
}

// randomToken returns 256 random bits, in base32.
func randomToken() string {
	return rand.Text() + rand.Text()
}

// add signs name in and returns the session's id.
func (a *authStore) add(name string) (string, *opSession) {
	id := randomToken()
	s := &opSession{name: name, csrf: randomToken(), expires: time.Now().Add(a.ttl)}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	var first [sha256.Size]byte
	var firstAt time.Time
	for k, v := range a.sessions {
		if now.After(v.expires) {
			delete(a.sessions, k)
		} else if firstAt.IsZero() || v.expires.Before(firstAt) {
			first, firstAt = k, v.expires
		}
	}
	if len(a.sessions) >= a.max {
		delete(a.sessions, first)
	}
	a.sessions[sha256.Sum256([]byte(id))] = s
	return id, s
}

// get returns the live session of id, or nil.
func (a *authStore) get(id string) *opSession {
	k := sha256.Sum256([]byte(id))
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[k]
	if s != nil && time.Now().After(s.expires) {
		delete(a.sessions, k)
		return nil
	}
	return s
}

// remove signs the session of id out.
func (a *authStore) remove(id string) {
	a.mu.Lock()
	delete(a.sessions, sha256.Sum256([]byte(id)))
	a.mu.Unlock()
}
