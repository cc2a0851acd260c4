package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"unicode/utf8"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/discovery"
)

// backupSuffix names the one backup setup keeps of a file it changes,
// next to it: FILE.bak-mcp-code-exec.
const backupSuffix = ".bak-mcp-code-exec"

// Errors of reading a configuration file.
var (
	// ErrConfigSyntax reports a configuration file that is not JSON, even
	// with comments and trailing commas; setup leaves it as it is.
	ErrConfigSyntax = errors.New("not valid JSON")
	// ErrConfigComments reports a configuration file with comments or
	// trailing commas, which rewriting it would lose; setup rewrites it
	// only with -force.
	ErrConfigComments = errors.New("it has comments or trailing commas, which rewriting it would lose")
)

// A jsonObject is a JSON object whose members keep their order and their
// text: setup changes one member of a client's file and writes every
// other one back as it was (re-indented).
type jsonObject struct {
	keys []string
	vals map[string]json.RawMessage
}

// newJSONObject returns an empty object.
func newJSONObject() *jsonObject { return &jsonObject{vals: map[string]json.RawMessage{}} }

// parseJSONObject reads data, one JSON object and nothing after it. A
// name given twice keeps its first place and its last value, as
// encoding/json reads it.
func parseJSONObject(data []byte) (*jsonObject, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("the document is %s, not an object", jsonKind(tok))
	}
	o := newJSONObject()
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string) // the decoder allows only strings here
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		o.set(key, raw)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("more data after the end of the document")
		}
		return nil, err
	}
	return o, nil
}

// jsonKind names the kind of value a document's first token starts.
func jsonKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "true or false"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// get returns the member called key.
func (o *jsonObject) get(key string) (json.RawMessage, bool) {
	v, ok := o.vals[key]
	return v, ok
}

// set replaces the member called key, or adds it last.
func (o *jsonObject) set(key string, v json.RawMessage) {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

// remove removes the member called key and reports whether there was one.
func (o *jsonObject) remove(key string) bool {
	if _, ok := o.vals[key]; !ok {
		return false
	}
	delete(o.vals, key)
	o.keys = slices.DeleteFunc(o.keys, func(k string) bool { return k == key })
	return true
}

// object returns the member called key as an object: a new, empty one
// when there is none (set it back to keep it), an error when it is
// something else.
func (o *jsonObject) object(key string) (*jsonObject, error) {
	raw, ok := o.get(key)
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return newJSONObject(), nil
	}
	t, err := parseJSONObject(raw)
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", key, err)
	}
	return t, nil
}

// setObject replaces the member called key by t.
func (o *jsonObject) setObject(key string, t *jsonObject) {
	data, _ := t.MarshalJSON() // its values are valid JSON already
	o.set(key, data)
}

// MarshalJSON writes the object compactly, its members in order.
func (o *jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshalJSON(k))
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// indented returns the object as a file holds it: indented by two
// spaces, as the clients write theirs, and a final newline.
func (o *jsonObject) indented() []byte {
	data, _ := o.MarshalJSON()
	var b bytes.Buffer
	if err := json.Indent(&b, data, "", "  "); err != nil {
		return append(data, '\n') // cannot happen: every value was read as JSON
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// marshalJSON encodes v without escaping <, > and & (paths and commands
// stay readable).
func marshalJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // strings, maps of strings, lists: nothing fails
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// A configFile is a JSON configuration file as setup read it: a client's,
// or the bridge's own.
type configFile struct {
	// path is the file as named; real, the file it names after symlinks
	// (written in place, so a symlinked file stays a symlink).
	path, real string
	// exists reports whether there was a file; mode is its permissions.
	exists bool
	mode   fs.FileMode
	// data is the file's content as read, doc its object.
	data []byte
	doc  *jsonObject
	// jsonc is set when the file parsed only once comments and trailing
	// commas were taken out.
	jsonc bool
}

// readConfigFile reads and parses the file at path. A missing or empty
// file is an empty object; a file that is not JSON is ErrConfigSyntax,
// with its line and column. A file that is JSON only with comments and
// trailing commas parses, with jsonc set.
func readConfigFile(path string) (*configFile, error) {
	f := &configFile{path: path, real: path, doc: newJSONObject()}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("reading %s: not a regular file", path)
	}
	if f.real, err = filepath.EvalSymlinks(path); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if f.data, err = os.ReadFile(path); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	f.exists, f.mode = true, fi.Mode().Perm()
	body := bytes.TrimPrefix(f.data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(body)) == 0 {
		return f, nil
	}
	doc, err := parseJSONObject(body)
	if err == nil {
		f.doc = doc
		return f, nil
	}
	plain := discovery.PlainJSON(f.data)
	doc, err = parseJSONObject(plain)
	if err == nil {
		f.doc, f.jsonc = doc, true
		return f, nil
	}
	// The error of the lenient pass is told (a comment is not the
	// fault), where Unmarshal finds it: its offset counts the bytes
	// read, the faulty one included.
	var syn *json.SyntaxError
	if errors.As(json.Unmarshal(plain, new(any)), &syn) {
		line, col := lineColumn(plain, int(syn.Offset)-1)
		return nil, fmt.Errorf("reading %s:%d:%d: %w: %v", path, line, col, ErrConfigSyntax, syn)
	}
	return nil, fmt.Errorf("reading %s: %w: %v", path, ErrConfigSyntax, err)
}

// lineColumn locates the byte offset at of data, both from 1; the column
// counts characters.
func lineColumn(data []byte, at int) (line, col int) {
	at = min(max(at, 0), len(data))
	start := bytes.LastIndexByte(data[:at], '\n') + 1
	return bytes.Count(data[:at], []byte("\n")) + 1, utf8.RuneCount(data[start:at]) + 1
}

// backupPath is where the backup of the file is written.
func (f *configFile) backupPath() string { return f.real + backupSuffix }

// write replaces the file by doc, atomically (a temporary file in the
// same directory, renamed over it), with the old file's permissions, or
// 0600 when there was none (entries carry secrets in their env). The file
// as it was is copied first to its backup, mode 0600, replacing an
// earlier one. Missing directories are made (0700). It returns the
// backup's path, "" when there was no file to back up.
func (f *configFile) write(doc *jsonObject) (backup string, err error) {
	if err := os.MkdirAll(filepath.Dir(f.real), 0o700); err != nil {
		return "", fmt.Errorf("making the directory of %s: %w", f.path, err)
	}
	mode := fs.FileMode(0o600)
	if f.exists {
		backup = f.backupPath()
		if err := writeAtomic(backup, f.data, 0o600); err != nil {
			return "", fmt.Errorf("backing up %s: %w", f.path, err)
		}
		mode = f.mode
	}
	if err := writeAtomic(f.real, doc.indented(), mode); err != nil {
		return backup, fmt.Errorf("writing %s: %w", f.path, err)
	}
	return backup, nil
}

// writeAtomic writes data to path through a temporary file of its
// directory renamed over it, so that a reader sees the old file or the
// new one, never a part.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	done = true
	return nil
}
