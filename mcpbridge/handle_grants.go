package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/entrypoint"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/handle"
	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/sandboxfile"
)

// The servers a client granted a handle's sandbox (the servers arguments
// of its calls) are part of the handle's authenticated state: a record
// in the sandbox, grantDir/servers, tagged under the handle key with the
// sandbox's engine and container, which the replica that loads a server
// writes (through the engine, never the runtime) and a replica that
// resumes the sandbox reads. A resuming replica grants at most the
// servers of a record with a good tag, and of those only the ones the
// interpreter reports loaded, that are configured and that the policy
// lets load. The sandbox's code can delete the record (its resumed
// session then has no server until a call names them again), or put back
// an older one (which names fewer servers: grants only grow), never
// forge one, nor take one from another sandbox. It is a file of
// sandboxfile, written and read as the other records are, in a form of
// its own: {"servers": [...], "tag": TAG}, the tag over grantParts.

// grantDir is where a handle's sandbox keeps its granted servers: beside
// the kept outputs, out of the files out.
const grantDir = entrypoint.OutDir + "/.mcp-grants"

// Bounds of the record.
const (
	maxGrantBytes   = 64 << 10
	maxGrantServers = 256
	grantIOTimeout  = 15 * time.Second
	grantRecordName = "servers"
)

// errGrantTampered says a granted servers' record is not one a bridge
// wrote for this sandbox (altered, forged, or another sandbox's).
var errGrantTampered = errors.New("the granted servers' record does not carry the bridge's tag for this sandbox")

// A grantFile is the record of the servers granted to a handle's sandbox.
type grantFile struct {
	Servers []string `json:"servers"`
	Tag     string   `json:"tag"`
}

// grantParts returns what the tag of servers granted to the sandbox sb
// authenticates: the sandbox as its handle names it (the replica that
// minted the handle knows the container's whole ID, one that resumes it
// the handle's part of it).
func grantParts(sb handle.Sandbox, servers []string) []string {
	return append([]string{"granted-servers", sb.Engine, handle.NamedRef(sb.Ref)}, servers...)
}

// recordGrants writes the servers granted to cs (a handle's session,
// under a shared key; else nothing) into its sandbox, when they changed
// since the last write that succeeded.
func (hs *handles) recordGrants(ctx context.Context, cs *clientSession) error {
	if cs.handle == "" || hs.opts.Key == "" || !cs.grantsDirty.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grantIOTimeout)
	defer cancel()
	servers := slices.Sorted(slices.Values(cs.state.servers()))
	f, err := json.Marshal(grantFile{Servers: servers, Tag: hs.keys.Tag(grantParts(cs.sandbox, servers)...)})
	if err != nil {
		return fmt.Errorf("encoding the granted servers: %w", err)
	}
	if err := hs.files.Write(ctx, sandboxfile.Session(cs.session), grantDir, grantRecordName, f); err != nil {
		return fmt.Errorf("recording the granted servers in the sandbox: %w", err)
	}
	cs.grantsDirty.Store(false)
	return nil
}

// readGrants returns the servers granted to the sandbox of cs, as its
// record says, once the record's tag is good (errGrantTampered
// otherwise).
func (hs *handles) readGrants(ctx context.Context, cs *clientSession) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, grantIOTimeout)
	defer cancel()
	raw, err := hs.files.Read(ctx, sandboxfile.Session(cs.session), grantDir, grantRecordName, maxGrantBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the granted servers: %w", err)
	}
	var f grantFile
	if err := json.Unmarshal(raw, &f); err != nil || len(f.Servers) > maxGrantServers {
		return nil, fmt.Errorf("%w: it does not decode", errGrantTampered)
	}
	if !hs.keys.CheckTag(f.Tag, grantParts(cs.sandbox, f.Servers)...) {
		return nil, errGrantTampered
	}
	return f.Servers, nil
}
