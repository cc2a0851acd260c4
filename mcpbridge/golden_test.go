package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden checks the MCP surface against the transcripts in
// testdata/golden: what a real client receives, byte for byte, for each
// request of each case.
//
// Each case is a txtar archive. Its comment describes the case. Its files:
//
//   - config (optional): bridge settings, one key=value a line; blank
//     lines and lines starting with # are ignored. The keys are
//     output (compact or toon), default_timeout and max_timeout (whole
//     seconds) and max_output_bytes (see entrypoint.Options).
//   - call.json, or call1.json, call2.json, … for a case of several
//     requests, sent in order on one connection: a request, as
//     {"method": M, "params": P}, where M is tools/call, tools/list,
//     resources/list or resources/read.
//   - per call, what came back: result.json (resultN.json), the result
//     as it was on the wire, indented, keys sorted; when the result holds
//     exactly one text content (tools/call) or text resource
//     (resources/read), that text is in result.text (resultN.text),
//     verbatim plus one newline, and the JSON holds "<resultN.text>" in
//     its place. For a JSON-RPC error, error (errorN) holds the error
//     object (code, message, data) instead.
//
// Nothing in the responses is normalised: they are deterministic (see
// goldenNormalize for the replacements, to be added only when a value
// varies from run to run).
//
// With -update, the expected files are rewritten from what the bridge
// returns now.
func TestGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			runGolden(t, file)
		})
	}
}

// goldenReplacements normalise what varies between runs in a response,
// each regular expression replaced by its replacement. There are none:
// the responses hold no durations, paths or session names today. Add
// entries here, each with the reason it varies, rather than weakening a
// comparison.
var goldenReplacements = []struct {
	re   *regexp.Regexp
	repl string
}{}

// goldenNormalize applies goldenReplacements to s.
func goldenNormalize(s string) string {
	for _, r := range goldenReplacements {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}

// A goldenCall is one request of a case and the names of its files.
type goldenCall struct {
	suffix string // "" for call.json, "1" for call1.json, …
	data   []byte // the call file
	method string
	params json.RawMessage
}

func (c goldenCall) callFile() string   { return "call" + c.suffix + ".json" }
func (c goldenCall) textFile() string   { return "result" + c.suffix + ".text" }
func (c goldenCall) resultFile() string { return "result" + c.suffix + ".json" }
func (c goldenCall) errorFile() string  { return "error" + c.suffix }

var callFileRE = regexp.MustCompile(`^call([0-9]*)\.json$`)

// runGolden runs the case in file.
func runGolden(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var opts Options
	var config []byte
	var calls []goldenCall
	want := map[string]string{}
	seen := map[string]bool{}
	for _, f := range ar.Files {
		if seen[f.Name] {
			t.Fatalf("%s: file %q twice", file, f.Name)
		}
		seen[f.Name] = true
		switch m := callFileRE.FindStringSubmatch(f.Name); {
		case f.Name == "config":
			config = f.Data
			if err := applyGoldenConfig(&opts, f.Data); err != nil {
				t.Fatalf("%s: config: %v", file, err)
			}
		case m != nil:
			var req struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			dec := json.NewDecoder(bytes.NewReader(f.Data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				t.Fatalf("%s: %s: %v", file, f.Name, err)
			}
			calls = append(calls, goldenCall{suffix: m[1], data: f.Data, method: req.Method, params: req.Params})
		default:
			want[f.Name] = string(f.Data)
		}
	}
	if len(calls) == 0 {
		t.Fatalf("%s: no call file", file)
	}
	slices.SortStableFunc(calls, func(a, b goldenCall) int {
		x, _ := strconv.Atoi(a.suffix)
		y, _ := strconv.Atoi(b.suffix)
		return x - y
	})
	if len(calls) > 1 && calls[0].suffix == "" {
		t.Fatalf("%s: call.json with other calls; number them all", file)
	}

	var rec *recorder
	cs := newFixture(t, fixtureOptions{Options: opts, Wrap: func(ct mcp.Transport) mcp.Transport {
		rec = &recorder{Transport: ct, responses: map[string]*jsonrpc.Response{}}
		return rec
	}}).connectInMemory(t)
	got := &txtar.Archive{Comment: ar.Comment}
	if config != nil {
		got.Files = append(got.Files, txtar.File{Name: "config", Data: config})
	}
	expected := map[string]bool{}
	for _, c := range calls {
		got.Files = append(got.Files, txtar.File{Name: c.callFile(), Data: c.data})
		for _, f := range rec.do(t, cs, c) {
			got.Files = append(got.Files, f)
			expected[f.Name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !expected[name] && !*update {
			t.Errorf("%s: unexpected file %q (no call has it, or the call's outcome changed kind; run with -update)", file, name)
		}
	}

	if *update {
		data := txtar.Format(got)
		// Check that the archive reads back as written: a response
		// line looking like a file marker would split a file.
		back := txtar.Parse(data)
		if len(back.Files) != len(got.Files) {
			t.Fatalf("%s: the response holds a txtar file marker; it cannot be a golden file", file)
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, f := range got.Files {
		if !expected[f.Name] {
			continue
		}
		w, ok := want[f.Name]
		if !ok {
			t.Errorf("%s: missing file %q; got:\n%s\n(run with -update)", file, f.Name, f.Data)
			continue
		}
		if w != string(f.Data) {
			t.Errorf("%s: %s differs (-want +got):\n%s", file, f.Name, lineDiff(w, string(f.Data)))
		}
	}
}

// applyGoldenConfig applies the key=value settings of data to opts.
func applyGoldenConfig(opts *Options, data []byte) error {
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("%q is not key=value", line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key == "output" {
			if value != OutputCompact && value != OutputTOON {
				return fmt.Errorf("output %q: want %s or %s", value, OutputCompact, OutputTOON)
			}
			opts.OutputMode = value
			continue
		}
		n, err := strconv.Atoi(value)
		if err != nil {
			return fmt.Errorf("%s: %v", key, err)
		}
		switch key {
		case "default_timeout":
			opts.DefaultTimeout = time.Duration(n) * time.Second
		case "max_timeout":
			opts.MaxTimeout = time.Duration(n) * time.Second
		case "max_output_bytes":
			opts.Session.MaxOutputBytes = n
		default:
			return fmt.Errorf("unknown key %q", key)
		}
	}
	return nil
}

// A recorder is a client transport that keeps the requests the client
// writes and the responses it reads, as they are on the wire.
type recorder struct {
	mcp.Transport

	mu        sync.Mutex
	lastID    map[string]jsonrpc.ID // by method
	responses map[string]*jsonrpc.Response
}

// Connect implements mcp.Transport.
func (r *recorder) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return recordingConn{c, r}, nil
}

// A recordingConn is a connection of a recorder.
type recordingConn struct {
	mcp.Connection
	r *recorder
}

func (c recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.r.mu.Lock()
		c.r.responses[fmt.Sprint(resp.ID.Raw())] = resp
		c.r.mu.Unlock()
	}
	return msg, err
}

func (c recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.r.mu.Lock()
		if c.r.lastID == nil {
			c.r.lastID = map[string]jsonrpc.ID{}
		}
		c.r.lastID[req.Method] = req.ID
		c.r.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

// do sends the request of c with the client and returns the files of its
// response.
func (r *recorder) do(t *testing.T, cs *mcp.ClientSession, c goldenCall) []txtar.File {
	t.Helper()
	ctx := context.Background()
	unmarshal := func(v any) {
		if len(c.params) == 0 {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(c.params))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("%s: params: %v", c.callFile(), err)
		}
	}
	var err error
	switch c.method {
	case "tools/call":
		p := &mcp.CallToolParams{}
		unmarshal(p)
		_, err = cs.CallTool(ctx, p)
	case "tools/list":
		p := &mcp.ListToolsParams{}
		unmarshal(p)
		_, err = cs.ListTools(ctx, p)
	case "resources/list":
		p := &mcp.ListResourcesParams{}
		unmarshal(p)
		_, err = cs.ListResources(ctx, p)
	case "resources/read":
		p := &mcp.ReadResourceParams{}
		unmarshal(p)
		_, err = cs.ReadResource(ctx, p)
	default:
		t.Fatalf("%s: unsupported method %q", c.callFile(), c.method)
	}

	r.mu.Lock()
	id, sent := r.lastID[c.method]
	var resp *jsonrpc.Response
	if sent {
		resp = r.responses[fmt.Sprint(id.Raw())]
		delete(r.lastID, c.method)
	}
	r.mu.Unlock()
	if resp == nil {
		t.Fatalf("%s: no response recorded (client error: %v)", c.callFile(), err)
	}

	if resp.Error != nil {
		data, merr := json.Marshal(resp.Error)
		if merr != nil {
			t.Fatalf("%s: encoding the error: %v", c.callFile(), merr)
		}
		return []txtar.File{{Name: c.errorFile(), Data: goldenJSON(t, data, nil)}}
	}
	var text *string
	files := []txtar.File{{Name: c.resultFile(), Data: goldenJSON(t, resp.Result, func(v any) {
		text = extractText(v, "<"+c.textFile()+">")
	})}}
	if text != nil {
		files = slices.Insert(files, 0, txtar.File{Name: c.textFile(), Data: []byte(goldenNormalize(*text) + "\n")})
	}
	return files
}

// goldenJSON returns raw indented with sorted keys and normalised, after
// edit (when not nil) has changed the decoded value. Numbers keep their
// text.
func goldenJSON(t *testing.T, raw []byte, edit func(any)) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	if edit != nil {
		edit(v)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return []byte(goldenNormalize(buf.String()))
}

// extractText replaces the text of the only text item of result's
// "content" (a tool result) or "contents" (a resource) with ref and
// returns it; it returns nil when there is not exactly one.
func extractText(result any, ref string) *string {
	m, ok := result.(map[string]any)
	if !ok {
		return nil
	}
	var item map[string]any
	for _, key := range []string{"content", "contents"} {
		list, ok := m[key].([]any)
		if !ok {
			continue
		}
		for _, x := range list {
			if xm, ok := x.(map[string]any); ok {
				if _, ok := xm["text"].(string); ok {
					if item != nil {
						return nil
					}
					item = xm
				}
			}
		}
	}
	if item == nil {
		return nil
	}
	text := item["text"].(string)
	item["text"] = ref
	return &text
}

// lineDiff returns a line diff of want and got: common lines start with
// a space, lines only in want with -, lines only in got with +. Runs of
// more than six common lines are shortened.
func lineDiff(want, got string) string {
	a := strings.Split(want, "\n")
	b := strings.Split(got, "\n")
	// lcs[i][j] is the length of the longest common subsequence of
	// a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	var same []string
	flush := func(last bool) {
		if len(same) > 6 {
			head, tail := same[:3], same[len(same)-3:]
			if len(out) == 0 {
				head = nil
			}
			if last {
				tail = nil
			}
			same = append(append(slices.Clip(head), fmt.Sprintf(" … (%d equal lines)", len(same)-len(head)-len(tail))), tail...)
		}
		out = append(out, same...)
		same = nil
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			same = append(same, " "+a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			flush(false)
			out = append(out, "-"+a[i])
			i++
		default:
			flush(false)
			out = append(out, "+"+b[j])
			j++
		}
	}
	flush(true)
	return strings.Join(out, "\n")
}
