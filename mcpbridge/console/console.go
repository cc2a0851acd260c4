// Package console is the operator's console of `serve -http`: a page at
// Path, behind its own token, that shows one replica's sessions, calls
// in flight with their last output lines, the warm pool, each engine's
// state and the recent audit records, pushed to the page by server-sent
// events.
//
// The page is plain server-rendered HTML (html/template) with one small
// embedded script and style sheet, under a strict Content-Security-Policy;
// the script renders the tables from the JSON events with textContent
// only, so code output, which is hostile, always shows as text.
//
// The token is taken as "Authorization: Bearer" (scripts, tests) or
// through a sign-in form that sets a cookie holding a random session id,
// never the token; every state-changing POST of a cookie session carries
// that session's CSRF token and an Origin of the page's own host.
package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// Paths the console serves, all under Path.
const (
	Path        = "/console"
	signInPath  = Path + "/signin"
	signOutPath = Path + "/signout"
	eventsPath  = Path + "/events"
	statePath   = Path + "/state"
	assetsPath  = Path + "/assets/"
	answerPath  = Path + "/answer"
	argsPath    = Path + "/arguments"
)

// MinTokenLength is the shortest console token accepted: as long as the
// handle key, since it opens more than a client's token does.
const MinTokenLength = 32

// Defaults of Options.
const (
	defaultSessionTTL      = 12 * time.Hour
	defaultMaxSessions     = 64
	defaultMaxStreams      = 8
	defaultInterval        = time.Second
	defaultPushGap         = 250 * time.Millisecond
	defaultStreamAge       = 10 * time.Minute
	defaultSignInsByMinute = 10
)

// Options configure a console; each zero value is a default, except
// Token, which is required.
type Options struct {
	// Token opens the console (MCP_BRIDGE_CONSOLE_TOKEN), at least
	// MinTokenLength characters.
	Token string
	// ClientToken is the clients' token (MCP_BRIDGE_HTTP_TOKEN); it must
	// differ from Token. Zero: none.
	ClientToken string
	// SessionTTL is how long a sign-in lasts. Zero: 12 hours.
	SessionTTL time.Duration
	// MaxSessions bounds the signed-in sessions kept; one more pushes out
	// the one that expires first. Zero: 64.
	MaxSessions int
	// MaxStreams bounds the event streams served at once; one more gets
	// 503. Zero: 8.
	MaxStreams int
	// Interval is how often a stream looks for a change to push. Zero: 1 s.
	// A Source that is a Notifier wakes its streams at once as well.
	Interval time.Duration
	// PushGap is the least time between two events of a stream when a
	// Notifier's change wakes it: a change is pushed at once, or when the
	// gap since the last event ends, so that a burst of changes (a
	// call's output) makes one event. Zero: 250 ms.
	PushGap time.Duration
	// StreamAge ends a stream after this long (the browser reconnects at
	// once), so that no stream outlives a sign-out or a shutdown for
	// long. Zero: 10 minutes.
	StreamAge time.Duration
	// SecureCookie marks the sign-in cookie Secure on every answer, for a
	// console behind a proxy that terminates TLS
	// (MCP_BRIDGE_CONSOLE_SECURE_COOKIE). Zero: Secure when this server
	// speaks TLS itself.
	SecureCookie bool
	// SignInsByMinute bounds the wrong tokens (at sign-in or as a
	// bearer) accepted in a minute from one remote address (an IPv6
	// address by its /64); past it that address's wrong tokens get 429
	// until its minute ends. The token is compared first: a right one is
	// never refused, so clients behind one proxy (one address) cannot
	// lock an operator out. Zero: 10.
	SignInsByMinute int
	// Done, when closed, ends the event streams (the bridge closing).
	// Zero: never.
	Done <-chan struct{}
	// Logger receives sign-ins, sign-outs and refusals. Zero: discarded.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.SessionTTL <= 0 {
		o.SessionTTL = defaultSessionTTL
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = defaultMaxSessions
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = defaultMaxStreams
	}
	if o.Interval <= 0 {
		o.Interval = defaultInterval
	}
	if o.PushGap <= 0 {
		o.PushGap = defaultPushGap
	}
	if o.StreamAge <= 0 {
		o.StreamAge = defaultStreamAge
	}
	if o.SignInsByMinute <= 0 {
		o.SignInsByMinute = defaultSignInsByMinute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// A Notifier is a Source that says when what it shows changed, so that
// the console pushes at once rather than at its next look
// (Options.Interval).
type Notifier interface {
	// Changed returns a channel closed at the source's next change.
	Changed() <-chan struct{}
}

// A Source is what the console shows: the bridge implements it.
type Source interface {
	// Snapshot returns the replica's state now.
	Snapshot(ctx context.Context) Snapshot
	// Answer answers the question id (Snapshot.Questions) for operator:
	// the call goes on when approve is set, else gets the refusal. An
	// error says there is no such question (answered, or its call ended).
	Answer(id string, approve bool, operator string) error
	// Arguments returns the function that writes the whole arguments of
	// the question id as JSON (secrets redacted, format characters
	// escaped), or an error when there is no such question.
	Arguments(id string) (func(io.Writer) error, error)
}

//go:embed assets
var assets embed.FS

// templates are the console's pages.
var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"seconds": func(s float64) string { return (time.Duration(s) * time.Second).String() },
	"mib":     mib,
}).ParseFS(assets, "assets/*.html"))

// mib renders bytes of memory as the page shows them ("" when not known).
func mib(n int64) string {
	if n <= 0 {
		return ""
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

// A Console serves the console's pages, events and actions.
type Console struct {
	opts    Options
	src     Source
	token   [sha256.Size]byte
	client  [sha256.Size]byte // zero: no clients' token
	auth    *authStore
	streams chan struct{} // a slot per stream served
	static  http.Handler
	mux     *http.ServeMux // routes
}

// tokenMatches reports, in constant time, whether given is the console
// token.
func (c *Console) tokenMatches(given string) bool {
	d := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(d[:], c.token[:]) == 1
}

// isClientToken reports, in constant time, whether given is the clients'
// token (refused, and logged as such).
func (c *Console) isClientToken(given string) bool {
	d := sha256.Sum256([]byte(given))
	var zero [sha256.Size]byte
	return c.client != zero && subtle.ConstantTimeCompare(d[:], c.client[:]) == 1
}

// render writes the template name with d.
func (c *Console) render(w http.ResponseWriter, name string, d any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := templates.ExecuteTemplate(w, name, d); err != nil {
		c.opts.Logger.Warn("rendering the console", "page", name, "err", err)
	}
}
