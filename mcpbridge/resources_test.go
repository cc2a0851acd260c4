package mcpbridge

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/render"
)

func TestOutputBudget(t *testing.T) {
	t.Parallel()
	opts := Options{OutputBudget: 4 << 10}
	cs, _ := connectClient(t, opts)
	ctx := context.Background()
	// 2,000 numbered lines on stdout (about 20 KiB), a few on stderr.
	code := "import sys\nfor i in range(2000): print('line %05d' % i)\nprint('err', file=sys.stderr)"
	res, text, sc := call(t, cs, map[string]any{"code": code})
	if len(text) > 4<<10+512 || !strings.HasPrefix(text, "line 00000\n") || !strings.Contains(text, "line 01999\nstderr:\nerr") ||
		!strings.Contains(text, "bytes cut to fit the output budget; the whole output: sandbox://output/1") {
		t.Fatalf("cut text (%d bytes): %q", len(text), text)
	}
	if sc["fullOutput"] != "sandbox://output/1" || len(sc["stdout"].([]any)) > 400 {
		t.Fatalf("structured content follows the budget: fullOutput %v, %d lines", sc["fullOutput"], len(sc["stdout"].([]any)))
	}
	link, ok := res.Content[1].(*mcp.ResourceLink)
	if !ok || link.URI != "sandbox://output/1" {
		t.Fatalf("content %+v: want a resource link to the whole output", res.Content)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
	if err != nil {
		t.Fatal(err)
	}
	whole := read.Contents[0].Text
	if strings.Count(whole, "\n")+1 != 2002 || !strings.Contains(whole, "line 01000\n") || !strings.HasSuffix(whole, "stderr:\nerr") {
		t.Fatalf("the whole output: %d lines, %q…", strings.Count(whole, "\n")+1, whole[:100])
	}
	// A call within the budget is not cut and links nothing.
	res, text, sc = call(t, cs, map[string]any{"code": "print('small')"})
	if text != "small" || len(res.Content) != 1 || sc["fullOutput"] != nil {
		t.Fatalf("small call: %q %+v %v", text, res.Content, sc)
	}
	// Another session cannot read it.
	other, _ := connectClient(t, opts)
	_, err = other.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("another session read %s: %v", link.URI, err)
	}
	// Only the last 8 cut outputs are kept.
	for range render.KeptOutputs {
		call(t, cs, map[string]any{"code": code})
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: link.URI}); !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("output 1 after %d more: %v", render.KeptOutputs, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "sandbox://output/9"}); err != nil {
		t.Fatalf("output 9: %v", err)
	}
}

// TestFilesResource reads files out through a client: an unknown one is
// not found, and the template is listed.
func TestFilesResource(t *testing.T) {
	t.Parallel()
	cs, _ := connectClient(t, Options{})
	ctx := context.Background()
	tmpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, tm := range tmpls.ResourceTemplates {
		found = found || tm.URITemplate == "sandbox://files/{+path}{?session}"
	}
	if !found {
		t.Fatalf("templates %+v lack sandbox://files/{+path}{?session}", tmpls.ResourceTemplates)
	}
	notFound := func(uri string) {
		t.Helper()
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(string(je.Data), uri) {
			t.Fatalf("reading %s: %v; want resource not found", uri, err)
		}
	}
	// Before the session has a sandbox, and after.
	notFound("sandbox://files/x")
	call(t, cs, map[string]any{"code": "print(1)"})
	notFound("sandbox://files/x")
	notFound("sandbox://files/sub/my%20file.csv")
}
