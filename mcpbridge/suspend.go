package mcpbridge

import "github.com/modelcontextprotocol/go-sdk/mcp"

// protocolAsksByResult is the first protocol version on which a server
// asks the client by answering a request with input requests, which the
// client fulfils and sends again (SEP-2322), instead of asking during it.
const protocolAsksByResult = "2026-07-28"

// asksByResult reports whether the client of ss is asked through
// input-required results.
func asksByResult(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= protocolAsksByResult
}
