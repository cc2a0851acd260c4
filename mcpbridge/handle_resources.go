package mcpbridge

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/sandboxfile"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/render"
)

// The resources of a sandbox behind a handle are read with the handle:
// resources/read carries no session under protocol 2026-07-28, and any
// replica may get the read. Their URIs carry the handle in the query
// (sessionQuery), and what they name is kept in the sandbox itself, where
// every replica reads it: a file out where the call left it, a whole
// output cut to the budget in handleOutputDir.

// sessionQuery begins the query of a handle's resource URI; the handle
// follows (base64url: nothing to escape).
const sessionQuery = "?session="

// handleOutputDir is where a handle's sandbox keeps the whole outputs of
// its calls cut to the budget, one file per output (its id), the newest
// 16 (the runtime prunes the rest): in the files-out directory, which the
// engine's archive API reaches on every backend (a hidden directory the
// runtime leaves out of the files out). The code could change them, as
// it could its output; they are read bounded, as untrusted.
const handleOutputDir = entrypoint.OutDir + "/.mcp-outputs"

// maxOutputRead bounds a whole output read back: two streams at the
// largest output a call keeps, and room for the notes.
const maxOutputRead = 64 << 20

// handleOutputTimeout bounds keeping or reading back a whole output.
const handleOutputTimeout = 30 * time.Second

// keepOutput writes whole, the output of a call of cs (a handle's
// session), into its sandbox and returns its resource URI; "" when it
// cannot (the caller keeps it in the bridge instead).
func (hs *handles) keepOutput(ctx context.Context, cs *clientSession, whole string) string {
	id := "h" + strings.ToLower(rand.Text()[:12])
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handleOutputTimeout)
	defer cancel()
	if err := hs.files.Write(wctx, sandboxfile.Session(cs.session), handleOutputDir, id, []byte(whole)); err != nil {
		cs.events.log.Warn("keeping a whole output in the sandbox; it stays in this replica only", "err", err)
		return ""
	}
	return render.OutputURIPrefix + id + sessionQuery + cs.handle
}

// splitSession splits a resource URI into its part before the handle's
// query and the handle ("" when it names none).
func splitSession(uri string) (string, string) {
	base, h, ok := strings.Cut(uri, sessionQuery)
	if !ok {
		return uri, ""
	}
	return base, h
}

// readResource serves a resource of a handle's sandbox: the whole output
// or file out that base names, read from the sandbox h names.
func (hs *handles) readResource(ctx context.Context, req *mcp.ReadResourceRequest, base, h string) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	token, client := bearerOf(req.Extra)
	held, problem := hs.heldByHandle(h, token, client)
	if held == nil {
		return nil, fmt.Errorf("reading %s: %s", base, problem)
	}
	ctx, cancel := context.WithTimeout(ctx, handleOutputTimeout)
	defer cancel()
	var data []byte
	var err error
	mimeType := "text/plain"
	switch {
	case strings.HasPrefix(base, render.OutputURIPrefix):
		id := strings.TrimPrefix(base, render.OutputURIPrefix)
		if n, nerr := strconv.Atoi(id); nerr == nil {
			// Kept by the replica that ran the call, when the sandbox
			// could not keep it (an engine without file access).
			text, ok := held.cs.outputs.Get(n)
			if !ok {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			data = []byte(text)
			break
		}
		if !validOutputID(id) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		data, err = hs.files.Read(ctx, sandboxfile.Session(held.cs.session), handleOutputDir, id, maxOutputRead)
	case strings.HasPrefix(base, render.FileURIPrefix):
		rel, uerr := url.PathUnescape(strings.TrimPrefix(base, render.FileURIPrefix))
		if uerr != nil || rel == "" {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		mimeType = render.FileType(rel)
		data, err = held.cs.session.ReadFile(ctx, entrypoint.OutDir, rel, render.MaxFileRead)
	default:
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		if errors.Is(err, entrypoint.ErrPinnedGone) {
			return nil, fmt.Errorf("reading %s: %s", base, hs.gone(held.cs, err))
		}
		return nil, fmt.Errorf("reading %s: %s", base, render.FileError(err))
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{render.ContentsOf(uri, mimeType, data)}}, nil
}

// validOutputID reports whether id can be the id keepOutput made.
func validOutputID(id string) bool {
	if len(id) != 13 || id[0] != 'h' {
		return false
	}
	for _, c := range id[1:] {
		if !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}
