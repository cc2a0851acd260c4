//go:build integration

package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// idpRedirect is the redirect URI of the client the test registers at the
// identity provider (nothing listens there: the TypeScript client catches
// the redirect for its code).
const idpRedirect = "http://localhost:9999/auth/callback"

// idpClients serializes the registration of clients, which the example
// provider keeps in a package variable.
var idpClients sync.Mutex

// startIdP starts zitadel/oidc's example OpenID provider on loopback: its
// two users (test-user@127.0.0.1 and test-user2, password verysecure,
// subjects id1 and id2) and one confidential client, clientID with
// secret, whose access tokens (opaque, introspected) have clientID as
// their audience. It returns the issuer.
func startIdP(t *testing.T, clientID, secret string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String() + "/"
	idpClients.Lock()
	storage.RegisterClients(storage.WebClient(clientID, secret, idpRedirect))
	idpClients.Unlock()
	router := exampleop.SetupServer(issuer, storage.NewStorage(storage.NewUserStore(issuer)), nil, false)
	srv := &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return issuer
}

// oauthResult is what integration/node/oauth.mjs prints.
type oauthResult struct {
	Probe struct {
		Status          int            `json:"status"`
		WWWAuthenticate string         `json:"wwwAuthenticate"`
		Metadata        map[string]any `json:"metadata"`
	} `json:"probe"`
	Users []struct {
		Results []struct {
			Text    string `json:"text"`
			IsError bool   `json:"isError"`
		} `json:"results"`
		AuthorizationURL string `json:"authorizationUrl"`
		Token            string `json:"token"`
	} `json:"users"`
}

// TestOAuthPeople: `serve -http` as the resource server of a real
// identity provider on loopback (zitadel/oidc's example), on each engine. A client
// without a token gets the specification's 401 naming the resource
// metadata, which names the provider; the official TypeScript SDK's
// client signs in as each of two people with the authorization code
// grant and PKCE and runs its calls, each in a sandbox of its own; the
// audit log says who ran what. With their tokens, over the protocol
// without sessions, Bob's handle is not Alice's to resume; the calls per
// minute are counted per person; a token of another resource, an ID
// token and garbage are refused.
func TestOAuthPeople(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e testEngine) {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		const secret = "integration-client-secret"
		issuer := startIdP(t, resource, secret)
		audit := filepath.Join(t.TempDir(), "audit.jsonl")
		b := startHTTPBridge(t, e, httpOpts{args: []string{"-http", fmt.Sprintf("127.0.0.1:%d", port)}, env: []string{
			"MCP_BRIDGE_OAUTH_ISSUER=" + issuer, "MCP_BRIDGE_OAUTH_RESOURCE=" + resource,
			"MCP_BRIDGE_OAUTH_CLIENT_ID=" + resource, "MCP_BRIDGE_OAUTH_CLIENT_SECRET=" + secret,
			"MCP_BRIDGE_OAUTH_SCOPES=openid", "MCP_BRIDGE_AUDIT_LOG=" + audit, "MCP_BRIDGE_PERSON_CALLS_PER_MINUTE=8",
			"MCP_BRIDGE_TASK_AFTER=0", "MCP_BRIDGE_PERSON_MAX_SANDBOXES=3"}})

		var res oauthResult
		runNode(t, "oauth.mjs", nil, map[string]any{"url": resource, "clientId": resource, "clientSecret": secret, "redirect": idpRedirect,
			"users": []map[string]any{
				{"username": "test-user@127.0.0.1", "password": "verysecure", "calls": []map[string]any{
					{"code": "import os\nwho = 'alice'\nprint(who, os.getuid())"}, {"code": "print(who)"}}},
				{"username": "test-user2", "password": "verysecure", "calls": []map[string]any{
					{"code": "print(globals().get('who', 'nobody'))"}}},
			}}, &res)
		meta := `resource_metadata="http://127.0.0.1:` + fmt.Sprint(port) + `/.well-known/oauth-protected-resource/mcp"`
		if res.Probe.Status != 401 || !strings.Contains(res.Probe.WWWAuthenticate, meta) || strings.Contains(res.Probe.WWWAuthenticate, "error=") ||
			res.Probe.Metadata["resource"] != resource || fmt.Sprint(res.Probe.Metadata["authorization_servers"]) != "["+issuer+"]" {
			t.Fatalf("without a token: %+v", res.Probe)
		}
		if len(res.Users) != 2 {
			t.Fatalf("users: %+v", res.Users)
		}
		alice, bob := res.Users[0], res.Users[1]
		if !strings.Contains(alice.AuthorizationURL, "code_challenge_method=S256") || !strings.Contains(alice.AuthorizationURL, "resource=") {
			t.Errorf("the authorization request: %s", alice.AuthorizationURL)
		}
		if len(alice.Results) != 2 || alice.Results[0].Text != "alice 65534" || alice.Results[1].Text != "alice" || bob.Results[0].Text != "nobody" {
			t.Errorf("the calls: alice %+v, bob %+v", alice.Results, bob.Results)
		}

		// Handles over the protocol without sessions, with their tokens.
		dial := func(token string) *mcp.ClientSession {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tr := &mcp.StreamableClientTransport{Endpoint: resource, HTTPClient: b.httpClient(token), MaxRetries: -1}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "integration-oauth", Version: "1"}, nil).Connect(ctx, tr, nil)
			if err != nil {
				t.Fatalf("connecting: %v", err)
			}
			t.Cleanup(func() { cs.Close() })
			return cs
		}
		bobCS, aliceCS := dial(bob.Token), dial(alice.Token)
		_, isErr, h := runIn(t, bobCS, "", "secret = 'bob'", 60)
		if isErr || h == "" {
			t.Fatalf("bob's handle: %q", h)
		}
		if text, isErr, _ := runIn(t, aliceCS, h, "print(secret)", 60); !isErr || !strings.Contains(text, "is not yours") || strings.Contains(text, "bob") {
			t.Errorf("alice with bob's handle: %q", text)
		}
		if text, _, _ := runIn(t, bobCS, h, "print(secret)", 60); text != "bob" {
			t.Errorf("bob with his handle: %q", text)
		}
		// A task of Bob's (clients that declare the Tasks extension get
		// one for every call here) is not Alice's to read.
		bobTasks := &taskClient{t: t, hc: b.httpClient(bob.Token), url: b.url}
		aliceTasks := &taskClient{t: t, hc: b.httpClient(alice.Token), url: b.url}
		task := bobTasks.call(map[string]any{"code": "print('bob task')", "timeout": 60})
		id, _ := task["taskId"].(string)
		if task["resultType"] != "task" || id == "" {
			t.Fatalf("bob's task: %v", task)
		}
		if _, e := aliceTasks.get(id); e == nil || !strings.Contains(fmt.Sprint(e["message"]), "not yours") {
			t.Errorf("alice reading bob's task: %v", e)
		}
		if done := bobTasks.await(id, time.Minute, status("completed")); !strings.Contains(taskText(done), "bob task") {
			t.Errorf("bob's task, read by bob: %v", done)
		}

		// Alice made 3 calls (2 over sessions, 1 refused run); her 8th
		// is allowed, her 9th not; Bob's go on.
		_, _, hA := runIn(t, aliceCS, "", "print(0)", 60)
		var last string
		for range 5 {
			last, _, _ = runIn(t, aliceCS, hA, "print(1)", 60)
		}
		if !strings.Contains(last, "MCP_BRIDGE_PERSON_CALLS_PER_MINUTE=8") {
			t.Errorf("alice's 9th call in a minute: %q", last)
		}
		if text, _, _ := runIn(t, bobCS, h, "print(2)", 60); text != "2" {
			t.Errorf("bob, past alice's limit: %q", text)
		}
		// Bob holds 3 sandboxes (his session's, his handle's, his task's):
		// a 4th is refused; Alice's 2 leave her room.
		if text, isErr, _ := runIn(t, bobCS, "", "print(3)", 60); !isErr || !strings.Contains(text, "MCP_BRIDGE_PERSON_MAX_SANDBOXES=3") {
			t.Errorf("bob's 4th sandbox: %q", text)
		}

		// A token that is not an access token of this resource, and an
		// empty one (no token: no error).
		for _, tt := range []struct{ token, want string }{{"not-a-token", `error="invalid_token"`}, {"", meta + `, scope="openid"`}} {
			r := b.raw(t, http.MethodPost, "", initializeRequest(), func(r *http.Request) {
				r.Header.Set("Authorization", "Bearer "+tt.token)
			})
			if got := r.header.Get("WWW-Authenticate"); r.status != 401 || !strings.Contains(got, tt.want) || (tt.token == "" && strings.Contains(got, "error=")) {
				t.Errorf("the token %q: %d %q", tt.token, r.status, got)
			}
		}

		data, _ := os.ReadFile(audit)
		for _, want := range []string{`"subject":"id1"`, `"subject":"id2"`, `"issuer":"` + issuer + `"`} {
			if !strings.Contains(string(data), want) {
				t.Errorf("the audit log lacks %s:\n%s", want, data)
			}
		}
	})
}
