package httpserve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// ProtocolStateless is the first protocol version without sessions
// (SEP-2575): no initialize handshake, no Mcp-Session-Id; every request
// carries its version and the client's capabilities in _meta.
const ProtocolStateless = "2026-07-28"

// modernHeader reports whether r names, in its MCP-Protocol-Version
// header, a protocol version without sessions (ProtocolStateless or a
// later one, which the stateless handler refuses with the versions it
// supports). Versions are dates, so they compare as strings.
func modernHeader(r *http.Request) bool {
	v := strings.TrimSpace(r.Header.Get("Mcp-Protocol-Version"))
	return v >= ProtocolStateless
}

// discovers reports whether body, a JSON-RPC message or batch, holds a
// server/discover request: a client probing for the protocol without
// sessions, which it sends before it knows the version to name (and
// without a session ID, which is when the caller asks).
func discovers(body []byte) bool {
	if !bytes.Contains(body, []byte(`server/discover`)) {
		return false // the common case, without decoding the body again
	}
	type message struct {
		Method string `json:"method"`
	}
	var one message
	if json.Unmarshal(body, &one) == nil {
		return one.Method == "server/discover"
	}
	var batch []message
	if json.Unmarshal(body, &batch) != nil {
		return false
	}
	for _, m := range batch {
		if m.Method == "server/discover" {
			return true
		}
	}
	return false
}
