package mcpbridge

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/protocol"
)

// asksByResult reports whether the client of ss is asked through
// input-required results, which it fulfils and sends again (SEP-2322,
// from protocol.Stateless on), instead of during its request.
func asksByResult(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= protocol.Stateless
}
