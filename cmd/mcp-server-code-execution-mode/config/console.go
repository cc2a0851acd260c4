package config

import (
	"fmt"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/console"
)

// consoleToken reads the token of the operator's console: at least
// console.MinTokenLength visible ASCII characters (as long as the handle
// key: it opens more than a client's token does), and not the clients'
// token, which must not open it; or unset (no console).
func (r *reader) consoleToken(name, clientToken string) string {
	v := r.get(name)
	if v == "" {
		return ""
	}
	switch {
	case !secretLike(v, console.MinTokenLength):
		r.bad(name, "(hidden)", fmt.Sprintf("want a token of at least %d visible ASCII characters, no spaces (such as the output of openssl rand -hex 32)", console.MinTokenLength))
		return ""
	case v == clientToken:
		r.bad(name, "(hidden)", "want a token of its own: it equals "+EnvHTTPToken+", and the clients' token must not open the console")
		return ""
	}
	return v
}
