// Package protocol names the MCP protocol version the bridge tells
// apart from the ones before it.
package protocol

// Stateless is the first protocol version without sessions (SEP-2575):
// no initialize handshake, no Mcp-Session-Id, every request carries its
// version and the client's capabilities in _meta. On it a server also
// asks the client by answering a request with input requests (SEP-2322),
// and the Tasks extension's requests carry the task ID in Mcp-Name.
// Versions are dates: they compare as strings, a later one is greater.
const Stateless = "2026-07-28"
