package entrypoint

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// An Image is an image a call showed (display, a matplotlib figure).
type Image struct {
	// MIME is one of image/png, image/jpeg, image/gif, image/webp and
	// image/svg+xml; the bytes were checked to be of that kind.
	MIME string
	Data []byte
}

// An OutFile is a regular file under OutDir that a call created or
// changed. The host reads it through the engine (Session.OpenFile).
type OutFile struct {
	// Path is absolute and clean, under OutDir.
	Path string
	// Size is the size the sandbox reported when the call ended.
	Size int64
	// Data is the file's content when the sandbox sent it with the result
	// (small files and images); nil when it must be read with OpenFile.
	Data []byte
}

// maxInlineBytes bounds the file content a call may send with its result
// (the runtime sends at most 1 MiB of small files and the call's image
// bytes); more is dropped, and read through the engine instead.
const maxInlineBytes = 16 << 20

// An inlineFiles keeps the files out a call sent with its result.
type inlineFiles struct {
	data  map[string][]byte
	bytes int64
}

// add keeps data as the content of the file at path, within maxInlineBytes.
func (in *inlineFiles) add(path string, data []byte) {
	if in.bytes+int64(len(data)) > maxInlineBytes {
		return
	}
	if in.data == nil {
		in.data = map[string][]byte{}
	}
	in.bytes += int64(len(data)) - int64(len(in.data[path]))
	in.data[path] = data
}

// attach gives each file of files the content sent for it, when its size
// is the one the result reports.
func (in *inlineFiles) attach(files []OutFile) {
	for i, f := range files {
		if d, ok := in.data[f.Path]; ok && int64(len(d)) == f.Size {
			files[i].Data = d
		}
	}
}

// droppedKinds are the members of a result's dropped object: bytes of
// each stream, images over the limits, files over maxOutFiles.
var droppedKinds = map[string]bool{"stdout": true, "stderr": true, "images": true, "files": true}

// imageTypes are the MIME types an image frame may carry.
var imageTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/svg+xml": true,
}

// decodeImage decodes the data of an image frame and checks that it is an
// image of type mime.
func decodeImage(mime, data string) (Image, error) {
	if !imageTypes[mime] {
		return Image{}, fmt.Errorf("with image type %q", cutUTF8(mime, 64))
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Image{}, errors.New("with data that is not base64")
	}
	if !IsImage(mime, b) {
		return Image{}, fmt.Errorf("whose data is not %s", mime)
	}
	return Image{MIME: mime, Data: b}, nil
}

// IsImage reports whether b starts like an image of type mime, one of
// image/png, image/jpeg, image/gif, image/webp and image/svg+xml.
func IsImage(mime string, b []byte) bool {
	if mime == "image/svg+xml" {
		head := b[:min(len(b), 4096)]
		return utf8.Valid(b) && bytes.Contains(head, []byte("<svg"))
	}
	return http.DetectContentType(b) == mime
}

// outFiles validates the files of a result frame.
func outFiles(wire []wireFile) ([]OutFile, error) {
	if len(wire) > maxOutFiles {
		return nil, fmt.Errorf("with %d files, over %d", len(wire), maxOutFiles)
	}
	if len(wire) == 0 {
		return nil, nil
	}
	files := make([]OutFile, 0, len(wire))
	seen := make(map[string]bool, len(wire))
	for _, w := range wire {
		if w.Path == nil || w.Size == nil {
			return nil, errors.New("with a file without path or size")
		}
		p, size := *w.Path, *w.Size
		if err := checkOutPath(p); err != nil {
			return nil, fmt.Errorf("with a file %v", err)
		}
		if size < 0 || size > maxFileBytes {
			return nil, errors.New("with a bad file size")
		}
		if seen[p] {
			return nil, fmt.Errorf("with file %s twice", strconv.Quote(p))
		}
		seen[p] = true
		files = append(files, OutFile{Path: p, Size: size})
	}
	return files, nil
}

// checkOutPath checks that p is a clean absolute path of at most
// maxOutPath bytes of UTF-8 under OutDir.
func checkOutPath(p string) error {
	switch {
	case len(p) > maxOutPath:
		return fmt.Errorf("path over %d bytes", maxOutPath)
	case !utf8.ValidString(p) || strings.ContainsRune(p, 0):
		return errors.New("path that is not clean UTF-8")
	case path.Clean(p) != p || !strings.HasPrefix(p, OutDir+"/"):
		return fmt.Errorf("path %s that is not a clean path under %s", strconv.Quote(cutUTF8(p, 256)), OutDir)
	}
	return nil
}

// An imageBox keeps the images of a call within its limits and counts
// those dropped.
type imageBox struct {
	maxCount int
	maxBytes int64
	images   []Image
	bytes    int64
	dropped  int64
}

// add keeps img if it fits the limits.
func (b *imageBox) add(img Image) {
	if len(b.images) >= b.maxCount || b.bytes+int64(len(img.Data)) > b.maxBytes {
		b.dropped++
		return
	}
	b.images = append(b.images, img)
	b.bytes += int64(len(img.Data))
}

// note returns the text that tells how many images were dropped, extra
// being those the sandbox dropped itself; "" when none was.
func (b *imageBox) note(extra int64) string {
	n := b.dropped + extra
	if n == 0 {
		return ""
	}
	what := "1 image was"
	if n > 1 {
		what = strconv.FormatInt(n, 10) + " images were"
	}
	return fmt.Sprintf("[%s not shown: a call shows at most %d images and %s of images]",
		what, b.maxCount, engine.FormatBytes(b.maxBytes))
}
