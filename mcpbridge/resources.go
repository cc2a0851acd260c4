package mcpbridge

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readCapabilities serves the capabilities resource.
func (b *Bridge) readCapabilities(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if req.Params.URI != capabilitiesURI {
		return nil, invalidParams(fmt.Sprintf("unknown resource %q; this server has %s", req.Params.URI, capabilitiesURI))
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: capabilitiesURI, MIMEType: "text/markdown", Text: capabilitiesManual,
	}}}, nil
}

// readOutput serves a kept output to the session that made the call.
func (b *Bridge) readOutput(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	if base, h := splitSession(uri); h != "" {
		return b.handles.readResource(ctx, req, base, h)
	}
	cs := b.existing(req.Session)
	if cs == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return cs.outputs.Read(uri)
}

// readFileResource serves a file out to the session whose call reported it.
func (b *Bridge) readFileResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	if base, h := splitSession(uri); h != "" {
		return b.handles.readResource(ctx, req, base, h)
	}
	cs := b.existing(req.Session)
	if cs == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return cs.files.Read(ctx, cs.session.OpenFile, uri)
}
