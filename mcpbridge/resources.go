package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
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
		return b.readHandleResource(ctx, req, base, h)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(uri, outputURIPrefix))
	if err != nil || !strings.HasPrefix(uri, outputURIPrefix) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	cs := b.existing(req.Session)
	if cs == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	text, ok := cs.outputs.get(n)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
}

// readFileResource serves a file out to the session whose call reported it.
func (b *Bridge) readFileResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	if base, h := splitSession(uri); h != "" {
		return b.readHandleResource(ctx, req, base, h)
	}
	cs := b.existing(req.Session)
	if cs == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	l, ok := cs.files.get(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	data, err := readFile(ctx, cs.session.OpenFile, l.sandboxID, l.path, maxFileRead)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, entrypoint.ErrSandboxGone) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, fmt.Errorf("reading %s: %s", uri, fileError(err))
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{contentsOf(uri, l.mimeType, data)}}, nil
}
