package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
)

// maxSavedFile bounds one file of /workspace/out that exec -out saves (the
// files-out mount is smaller unless an operator raised it).
const maxSavedFile = 256 << 20

// imageExt is the file extension of each image type a result carries.
var imageExt = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp", "image/svg+xml": ".svg",
}

// A savedResult is what exec keeps of a call's images and files out: where
// each went under -out ("" when not saved), and why one was not.
type savedResult struct {
	images []string
	files  []string
	errs   []string
}

// saveOutputs writes the images of res to dir as image-N.EXT (N from 1,
// in order) and its files of /workspace/out at their path under dir,
// reading those the result does not carry through open. dir is created
// when missing; nothing is written outside it (os.Root), whatever names
// the sandbox gave its files.
func saveOutputs(ctx context.Context, dir string, res *entrypoint.Result, open func(ctx context.Context, sandboxID, path string, max int64) (io.ReadCloser, int64, error)) (savedResult, error) {
	var s savedResult
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return s, fmt.Errorf("creating the -out directory: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return s, fmt.Errorf("opening the -out directory: %w", err)
	}
	defer root.Close()
	for i, img := range res.Images {
		name := fmt.Sprintf("image-%d%s", i+1, imageExt[img.MIME])
		if err := root.WriteFile(name, img.Data, 0o644); err != nil {
			s.images = append(s.images, "")
			s.errs = append(s.errs, fmt.Sprintf("image %d: %v", i+1, err))
			continue
		}
		s.images = append(s.images, filepath.Join(dir, name))
	}
	for _, f := range res.Files {
		rel, err := outRel(f.Path)
		if err == nil {
			err = saveFile(ctx, root, rel, f, res.SandboxID, open)
		}
		if err != nil {
			s.files = append(s.files, "")
			s.errs = append(s.errs, fmt.Sprintf("%s: %v", f.Path, err))
			continue
		}
		s.files = append(s.files, filepath.Join(dir, filepath.FromSlash(rel)))
	}
	return s, nil
}

// outRel returns p's path relative to /workspace/out, refusing one
// outside it.
func outRel(p string) (string, error) {
	rel, ok := strings.CutPrefix(path.Clean(p), entrypoint.OutDir+"/")
	if !ok || rel == "" || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("not a path under %s", entrypoint.OutDir)
	}
	return rel, nil
}

// saveFile writes the file out f to rel under root.
func saveFile(ctx context.Context, root *os.Root, rel string, f entrypoint.OutFile, sandboxID string,
	open func(ctx context.Context, sandboxID, path string, max int64) (io.ReadCloser, int64, error)) error {
	if d := path.Dir(rel); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if f.Data != nil {
		return root.WriteFile(rel, f.Data, 0o644)
	}
	rc, _, err := open(ctx, sandboxID, f.Path, maxSavedFile)
	if err != nil {
		return fmt.Errorf("reading it from the sandbox: %w", err)
	}
	defer rc.Close()
	w, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, rc)
	return errors.Join(err, w.Close())
}

// unsaved says on stderr what a call made that exec did not keep, and how
// to keep it.
func unsaved(stderr io.Writer, res *entrypoint.Result) {
	var parts []string
	if n := len(res.Images); n > 0 {
		parts = append(parts, plural(n, "image", "images"))
	}
	if n := len(res.Files); n > 0 {
		names := make([]string, 0, min(n, 3))
		for _, f := range res.Files[:min(n, 3)] {
			names = append(names, strings.TrimPrefix(f.Path, entrypoint.OutDir+"/"))
		}
		more := ""
		if n > 3 {
			more = ", …"
		}
		parts = append(parts, fmt.Sprintf("%s of %s (%s%s)", plural(n, "file", "files"), entrypoint.OutDir, strings.Join(names, ", "), more))
	}
	if len(parts) > 0 {
		fmt.Fprintf(stderr, "mcp-server-code-execution-mode: exec: not saved: %s; pass -out DIR to keep them\n", strings.Join(parts, " and "))
	}
}

// An execJSON is exec -json's output: the whole result.
type execJSON struct {
	Status           string      `json:"status"`
	Stdout           string      `json:"stdout"`
	Stderr           string      `json:"stderr"`
	Truncated        bool        `json:"truncated,omitempty"`
	ExitCode         int         `json:"exit_code,omitempty"`
	ExceptionType    string      `json:"exception_type,omitempty"`
	ExceptionMessage string      `json:"exception_message,omitempty"`
	Traceback        string      `json:"traceback,omitempty"`
	DurationMS       float64     `json:"duration_ms"`
	Notice           string      `json:"notice,omitempty"`
	Images           []imageJSON `json:"images"`
	Files            []fileJSON  `json:"files"`
	Notes            []string    `json:"notes,omitempty"`
	// Errors are the images and files -out could not save.
	Errors []string `json:"errors,omitempty"`
}

// An imageJSON is an image of the result: its bytes (base64), and where
// -out saved it.
type imageJSON struct {
	MIMEType string `json:"mimeType"`
	Data     []byte `json:"data"`
	SavedAs  string `json:"saved_as,omitempty"`
}

// A fileJSON is a file of /workspace/out the call made or changed, and
// where -out saved it.
type fileJSON struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	SavedAs string `json:"saved_as,omitempty"`
}

// writeJSON prints res, with what saved kept of it, as one JSON object.
func writeJSON(w io.Writer, res *entrypoint.Result, saved savedResult) error {
	out := execJSON{Status: string(res.Status), Stdout: res.Stdout, Stderr: res.Stderr, Truncated: res.Truncated,
		ExitCode: res.ExitCode, ExceptionType: res.ExceptionType, ExceptionMessage: res.ExceptionMessage,
		Traceback: res.Traceback, DurationMS: float64(res.Duration.Microseconds()) / 1000, Notice: res.Notice,
		Images: []imageJSON{}, Files: []fileJSON{}, Notes: res.Notes, Errors: saved.errs}
	for i, img := range res.Images {
		j := imageJSON{MIMEType: img.MIME, Data: img.Data}
		if i < len(saved.images) {
			j.SavedAs = saved.images[i]
		}
		out.Images = append(out.Images, j)
	}
	for i, f := range res.Files {
		j := fileJSON{Path: f.Path, Size: f.Size}
		if i < len(saved.files) {
			j.SavedAs = saved.files[i]
		}
		out.Files = append(out.Files, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
