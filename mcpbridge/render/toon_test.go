package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toonCases are payload shapes the goldens (testdata/golden/output_toon)
// cannot reach without an engine's files: servers, the whole output's
// link, images, files out as a table (uniform) and as a list (one
// without a MIME type), notes. Each text was checked against the
// reference TypeScript encoder (@toon-format/toon 4.4.0: the same text,
// and its strict decoder gives back the structured content).
var toonCases = []struct {
	name string
	o    Outcome
	want string
}{
	{
		name: "rich",
		o: Outcome{
			status: statusSuccess, summary: "Success", stdout: "total: 3\n", servers: []string{"everything", "file system"},
			output: "sandbox://output/1", notice: "the sandbox was replaced",
			rich: Rich{
				content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: []byte("png")}},
				files: []payloadFile{
					{Path: "/workspace/out/by_region.csv", Size: 1234, MIMEType: "text/csv", URI: "sandbox://files/by_region.csv", As: "embedded"},
					{Path: "/workspace/out/plot, final.png", Size: 2048, MIMEType: "image/png", URI: "sandbox://files/plot,%20final.png", As: "image"},
				},
				notes: []string{"[2 images were not shown: a call shows at most 10 images and 8 MiB of images]"},
			},
		},
		want: "```toon\n" + `status: success
summary: Success
exitCode: 0
servers[2]: everything,file system
stdout[1]: "total: 3"
notice: the sandbox was replaced
fullOutput: "sandbox://output/1"
images: 1
files[2]{path,size,mimeType,uri,as}:
  /workspace/out/by_region.csv,1234,text/csv,"sandbox://files/by_region.csv",embedded
  "/workspace/out/plot, final.png",2048,image/png,"sandbox://files/plot,%20final.png",image
notes[1]: "[2 images were not shown: a call shows at most 10 images and 8 MiB of images]"` + "\n```",
	},
	{
		name: "files that are not uniform",
		o: Outcome{
			status: statusError, summary: "Sandbox exited with code 3", exitCode: 3, err: "Sandbox exited with code 3",
			rich: Rich{files: []payloadFile{
				{Path: "/workspace/out/a.bin", Size: 300000, URI: "sandbox://files/a.bin", As: "link"},
				{Path: "/workspace/out/b.txt", Size: 2, MIMEType: "text/plain", URI: "sandbox://files/b.txt", As: "embedded"},
			}},
		},
		want: "```toon\n" + `status: error
summary: Sandbox exited with code 3
exitCode: 3
error: Sandbox exited with code 3
files[2]:
  - path: /workspace/out/a.bin
    size: 300000
    uri: "sandbox://files/a.bin"
    as: link
  - path: /workspace/out/b.txt
    size: 2
    mimeType: text/plain
    uri: "sandbox://files/b.txt"
    as: embedded` + "\n```",
	},
}

// TestTOONText renders each case and checks that the structured content
// of the toon result is the same payload.
func TestTOONText(t *testing.T) {
	for _, tc := range toonCases {
		res := tc.o.Result(TOON)
		if got := res.Content[0].(*mcp.TextContent).Text; got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if _, ok := res.StructuredContent.(toonPayload); !ok {
			t.Errorf("%s: structured content %T, want the toon payload", tc.name, res.StructuredContent)
		}
	}
}

// TestTOONPayloadFields checks the original's toon payload: status and
// summary always, exitCode 0 on success and none on a timeout or a
// validation error, and the fields of the compact payload after them.
func TestTOONPayloadFields(t *testing.T) {
	for _, tt := range []struct {
		o    Outcome
		want string
	}{
		{Outcome{status: statusSuccess, summary: "Success (no output)"}, `{"status":"success","summary":"Success (no output)","exitCode":0}`},
		{Invalid("Missing 'code' argument"), `{"status":"validation_error","summary":"Missing 'code' argument","error":"Missing 'code' argument"}`},
		{Outcome{status: statusTimeout, summary: "Timeout: execution exceeded 2s", timeout: 2, stdout: "x\n"},
			`{"status":"timeout","summary":"Timeout: execution exceeded 2s","stdout":["x"],"timeoutSeconds":2}`},
	} {
		data, err := json.Marshal(tt.o.toonPayload())
		if err != nil || string(data) != tt.want {
			t.Errorf("%+v: %s, %v; want %s", tt.o, data, err, tt.want)
		}
	}
}

// TestTOONJSONFallback checks the original's fallback block: indented
// JSON with sorted keys, <, > and & as they are.
func TestTOONJSONFallback(t *testing.T) {
	got := jsonBlock(Outcome{status: statusError, summary: "a <b> & c", exitCode: 1}.toonPayload())
	want := "```json\n{\n  \"exitCode\": 1,\n  \"status\": \"error\",\n  \"summary\": \"a <b> & c\"\n}\n```"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if !strings.HasPrefix(toonText(toonPayload{Status: "success", Summary: "Success"}), "```toon\nstatus: success\n") {
		t.Fatal("a payload TOON encodes fell back to JSON")
	}
}
