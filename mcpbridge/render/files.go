package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// Limits of the files a result carries.
const (
	// embedMaxBytes: a file out up to this size is embedded in the
	// result; a larger one is linked.
	embedMaxBytes = 256 << 10
	// embedTotalBytes bounds the embedded files of one result; past it
	// files are linked.
	embedTotalBytes = 1 << 20
	// MaxFileRead bounds a file served by resources/read (the files-out
	// mount is smaller unless an operator raised it).
	MaxFileRead = 256 << 20
	// keptFileLinks bounds the file URIs a session remembers.
	keptFileLinks = 1000
)

// FileURIPrefix starts the URI of a file out; its path under
// /workspace/out follows, escaped.
const FileURIPrefix = "sandbox://files/"

// fileTypes are the MIME types of the extensions data work produces, so
// that a file's type does not depend on the host's /etc/mime.types;
// other extensions fall back to package mime.
var fileTypes = map[string]string{
	".csv": "text/csv", ".tsv": "text/tab-separated-values", ".txt": "text/plain", ".log": "text/plain",
	".md": "text/markdown", ".json": "application/json", ".jsonl": "application/jsonl", ".xml": "application/xml",
	".yaml": "application/yaml", ".yml": "application/yaml", ".toml": "application/toml", ".html": "text/html",
	".py": "text/x-python", ".sql": "application/sql", ".ipynb": "application/x-ipynb+json",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".svg": "image/svg+xml", ".pdf": "application/pdf", ".zip": "application/zip", ".gz": "application/gzip",
	".parquet": "application/vnd.apache.parquet", ".npy": "application/octet-stream", ".bin": "application/octet-stream",
	".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}

// imageFileTypes are the file types a result shows as images.
var imageFileTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/svg+xml": true,
}

// FileType returns the MIME type of the file at p by its extension; ""
// when unknown.
func FileType(p string) string {
	ext := strings.ToLower(path.Ext(p))
	if t, ok := fileTypes[ext]; ok {
		return t
	}
	t, _, _ := mime.ParseMediaType(mime.TypeByExtension(ext))
	return t
}

// isText reports whether data of type mimeType is shown as text.
func isText(mimeType string, data []byte) bool {
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return false
	}
	switch {
	case mimeType == "", strings.HasPrefix(mimeType, "text/"), mimeType == "image/svg+xml":
		return true
	}
	for _, s := range []string{"json", "xml", "yaml", "toml", "sql", "javascript"} {
		if strings.Contains(mimeType, s) {
			return true
		}
	}
	return false
}

// fileURI returns the URI of the file out at p (under OutDir).
func fileURI(p string) string {
	rel := strings.TrimPrefix(p, entrypoint.OutDir+"/")
	parts := strings.Split(rel, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return FileURIPrefix + strings.Join(parts, "/")
}

// A fileLink is what resources/read needs to serve a file out.
type fileLink struct {
	sandboxID, path, mimeType string
}

// A FileLinks remembers the URIs of a session's files out, the latest
// keptFileLinks of them, for resources/read. Its zero value is empty and
// ready to use.
type FileLinks struct {
	mu    sync.Mutex
	links map[string]fileLink
	order []string
}

// add remembers l under uri.
func (f *FileLinks) add(uri string, l fileLink) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.links == nil {
		f.links = map[string]fileLink{}
	}
	if _, ok := f.links[uri]; ok {
		f.order = slices.DeleteFunc(f.order, func(u string) bool { return u == uri }) // reported again: now the latest
	}
	f.order = append(f.order, uri)
	f.links[uri] = l
	if len(f.order) > keptFileLinks {
		delete(f.links, f.order[0])
		f.order = f.order[1:]
	}
}

// get returns the link of uri.
func (f *FileLinks) get(uri string) (fileLink, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[uri]
	return l, ok
}

// Read serves uri, the URI of a file out of the session, to
// resources/read: the file as it is now, read through open.
func (f *FileLinks) Read(ctx context.Context, open Opener, uri string) (*mcp.ReadResourceResult, error) {
	l, ok := f.get(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	data, err := readFile(ctx, open, l.sandboxID, l.path, MaxFileRead)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, entrypoint.ErrSandboxGone) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, fmt.Errorf("reading %s: %s", uri, FileError(err))
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{ContentsOf(uri, l.mimeType, data)}}, nil
}

// An Opener opens a file of a session's sandbox (entrypoint.Session.OpenFile).
type Opener func(ctx context.Context, sandboxID, path string, max int64) (io.ReadCloser, int64, error)

// A Rich is what a call returns besides its text: images, files out, and
// notes on what was left out.
type Rich struct {
	content []mcp.Content
	files   []payloadFile
	notes   []string
}

// A payloadFile describes a file out in the structured result.
type payloadFile struct {
	Path     string `json:"path"`
	Size     int64  `json:"size"`
	MIMEType string `json:"mimeType,omitempty"`
	URI      string `json:"uri"`
	// As is how the result carries it: "image", "embedded" or "link".
	As string `json:"as"`
}

// RichOf renders the images and files out of res, remembering the files
// in links. Files are read through open; images among them count against
// the call's image limits (count and bytes, what res.Images left), and
// one that does not fit is linked. A file that cannot be read is left out
// with a note; it never fails the call.
func RichOf(ctx context.Context, res *entrypoint.Result, open Opener, links *FileLinks, maxImages int, maxImageBytes int64) Rich {
	var r Rich
	if res == nil {
		return r
	}
	r.notes = append(r.notes, res.Notes...)
	imgBytes := int64(0)
	for _, img := range res.Images {
		r.content = append(r.content, &mcp.ImageContent{Data: img.Data, MIMEType: img.MIME})
		imgBytes += int64(len(img.Data))
	}
	images, embedded := len(res.Images), int64(0)
	for _, f := range res.Files {
		uri, t := fileURI(f.Path), FileType(f.Path)
		name := strings.TrimPrefix(f.Path, entrypoint.OutDir+"/")
		pf := payloadFile{Path: f.Path, Size: f.Size, MIMEType: t, URI: uri, As: "link"}
		links.add(uri, fileLink{sandboxID: res.SandboxID, path: f.Path, mimeType: t})
		asImage := imageFileTypes[t] && images < maxImages && imgBytes+f.Size <= maxImageBytes
		if asImage || (!imageFileTypes[t] && f.Size <= embedMaxBytes && embedded+f.Size <= embedTotalBytes) {
			limit := int64(embedMaxBytes)
			if asImage {
				limit = max(limit, maxImageBytes-imgBytes)
			}
			data, err := f.Data, error(nil)
			if data == nil || int64(len(data)) > limit {
				data, err = readFile(ctx, open, res.SandboxID, f.Path, limit)
			}
			switch {
			case err != nil:
				r.notes = append(r.notes, fmt.Sprintf("[file %s not returned: %s]", name, FileError(err)))
				continue
			case asImage && entrypoint.IsImage(t, data):
				r.content = append(r.content, &mcp.ImageContent{Data: data, MIMEType: t})
				images, imgBytes, pf.As, pf.Size = images+1, imgBytes+int64(len(data)), "image", int64(len(data))
			case int64(len(data)) <= embedMaxBytes && embedded+int64(len(data)) <= embedTotalBytes:
				rc := ContentsOf(uri, t, data)
				r.content = append(r.content, &mcp.EmbeddedResource{Resource: rc})
				embedded += int64(len(data))
				pf.As, pf.Size, pf.MIMEType = "embedded", int64(len(data)), rc.MIMEType
			}
		}
		if pf.As == "link" {
			size := f.Size
			r.content = append(r.content, &mcp.ResourceLink{URI: uri, Name: name, MIMEType: t, Size: &size,
				Title: "A file the code wrote to " + entrypoint.OutDir})
		}
		r.files = append(r.files, pf)
	}
	return r
}

// AddQuery appends q to the URIs of the files out in r (a handle's
// query, naming its sandbox).
func (r *Rich) AddQuery(q string) {
	for i := range r.files {
		r.files[i].URI += q
	}
	for _, c := range r.content {
		switch c := c.(type) {
		case *mcp.ResourceLink:
			if strings.HasPrefix(c.URI, FileURIPrefix) {
				c.URI += q
			}
		case *mcp.EmbeddedResource:
			if c.Resource != nil && strings.HasPrefix(c.Resource.URI, FileURIPrefix) {
				c.Resource.URI += q
			}
		}
	}
}

// readFile reads the whole file at p of sandbox sid, at most max bytes.
func readFile(ctx context.Context, open Opener, sid, p string, max int64) ([]byte, error) {
	rc, size, err := open(ctx, sid, p, max)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := bytes.NewBuffer(make([]byte, 0, size))
	if _, err := io.Copy(buf, rc); err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return buf.Bytes(), nil
}

// FileError says for people why a file out could not be returned.
func FileError(err error) string {
	switch {
	case errors.Is(err, engine.ErrNotRegular):
		return "it is not a regular file (a symbolic link is never followed)"
	case errors.Is(err, fs.ErrNotExist):
		return "it was removed"
	case errors.Is(err, engine.ErrFileTooLarge):
		return "it grew past its limit while it was read"
	case errors.Is(err, entrypoint.ErrSandboxGone):
		return "the sandbox that wrote it is gone"
	}
	return err.Error()
}

// FilesTemplate is the resource template of the files out.
func FilesTemplate() *mcp.ResourceTemplate {
	return &mcp.ResourceTemplate{
		Name:        "file",
		Title:       "A file a run_python call wrote to " + entrypoint.OutDir,
		Description: "A file the code of this session created or changed under " + entrypoint.OutDir + ", as it is now, read from the session's sandbox while that sandbox lives.",
		URITemplate: FileURIPrefix + "{+path}{?session}",
	}
}

// ContentsOf returns data of type mimeType ("": unknown) as the contents
// of resource uri: text when it is text, else a blob.
func ContentsOf(uri, mimeType string, data []byte) *mcp.ResourceContents {
	rc := &mcp.ResourceContents{URI: uri, MIMEType: mimeType}
	if len(data) > 0 && isText(mimeType, data) {
		rc.Text = string(data)
		if rc.MIMEType == "" {
			rc.MIMEType = "text/plain"
		}
		return rc
	}
	if data == nil {
		data = []byte{} // an empty file is an empty blob, not a missing one
	}
	rc.Blob = data
	if rc.MIMEType == "" {
		rc.MIMEType = http.DetectContentType(data)
	}
	return rc
}
