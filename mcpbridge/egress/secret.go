package egress

// What keeps a secret the gateway adds to a request from coming back to
// the sandbox in the answer: an echo of the request (TRACE, a debug or
// echo endpoint, an error page quoting headers) would hand it to the
// code, which may send it anywhere it is allowed to.

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/policy"
)

// askWhole prepares req, to a host the policy adds secrets to, for an
// answer whose every occurrence of them the gateway can find: unencoded
// (Accept-Encoding: identity; a compressed echo hides the secret from
// the mask) and whole (no Range or If-Range: ranges would cut it into
// pieces no mask recognizes). It returns the masker of the answer.
func askWhole(req *http.Request, secrets []policy.Secret) *masker {
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Del("Range")
	req.Header.Del("If-Range")
	return newMasker(secrets)
}

// encodedBody says why resp, the answer to req, cannot be masked: a body
// in a content coding other than identity, which the request did not ask
// for ("" when it can).
func encodedBody(req *http.Request, resp *http.Response) string {
	if req.Method == http.MethodHead || resp.Body == http.NoBody {
		return ""
	}
	for _, v := range resp.Header.Values("Content-Encoding") {
		for coding := range strings.SplitSeq(v, ",") {
			if c := strings.TrimSpace(coding); c != "" && !strings.EqualFold(c, "identity") {
				return fmt.Sprintf("the answer's body is in the content coding %q, though the gateway asked for identity: a body the gateway adds a secret for must be plain, for it to check that the secret does not come back", c)
			}
		}
	}
	return ""
}

// maskAnswer masks m's secrets in resp's status line and head, and in
// its body and trailer as they are relayed, counting the occurrences
// into *count.
func maskAnswer(m *masker, resp *http.Response, count *int64) {
	status, n := m.maskString(resp.Status)
	resp.Status = status
	*count += int64(n + m.header(resp.Header))
	if resp.Body == http.NoBody {
		return
	}
	trailer := resp.Trailer
	resp.Body = m.reader(resp.Body, count, func() { *count += int64(m.header(trailer)) })
}
