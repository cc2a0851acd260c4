package mcpbridge

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCapabilitiesResource(t *testing.T) {
	t.Parallel()
	cs, _ := connectClient(t, Options{})
	ctx := context.Background()
	list, err := cs.ListResources(ctx, nil)
	if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != capabilitiesURI {
		t.Fatalf("resources/list: %+v %v", list, err)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: capabilitiesURI})
	if err != nil || !strings.Contains(read.Contents[0].Text, "search_tool_docs") {
		t.Fatalf("resources/read: %+v %v", read, err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "resource://other"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("unknown URI: %v, want invalid params", err)
	}
}
