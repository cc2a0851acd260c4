package httpserve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRequests: a request kept is named in its header; a call tied to it
// ends when it does; whether it had a session outlives it; a request not
// over HTTP, or one whose key is unknown, is neither tied nor stateless.
func TestRequests(t *testing.T) {
	var rs Requests
	for _, stateless := range []bool{false, true} {
		rctx, endRequest := context.WithCancel(context.Background())
		r := httptest.NewRequest(http.MethodPost, Path, nil).WithContext(rctx)
		end := rs.begin(r, stateless)
		extra := &mcp.RequestExtra{Header: r.Header}
		if got := Stateless(extra); got != stateless {
			t.Errorf("Stateless = %v, want %v", got, stateless)
		}
		ctx, stop := rs.Tie(context.Background(), extra)
		endRequest()
		<-ctx.Done() // the request ended: so does the call's context
		stop()
		end()
		if got := Stateless(extra); got != stateless {
			t.Errorf("Stateless after the request = %v, want %v", got, stateless)
		}
		ctx, stop = rs.Tie(context.Background(), extra)
		if ctx.Err() != nil || ctx.Done() != nil {
			t.Errorf("a request no longer in flight tied the call")
		}
		stop()
	}
	for _, extra := range []*mcp.RequestExtra{nil, {}, {Header: http.Header{requestHeader: {"999"}}}} {
		if Stateless(extra) {
			t.Errorf("Stateless(%+v) = true", extra)
		}
		ctx, stop := rs.Tie(context.Background(), extra)
		if ctx.Done() != nil {
			t.Errorf("Tie(%+v) tied the call", extra)
		}
		stop()
	}
}
