package policy

import (
	"errors"
	"log/slog"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/mcpbridge/internal/opfile"
)

// ErrRefused reports a proxied call, tool or server that the tool policy
// refuses, or a policy file that cannot be used (then everything is
// refused).
var ErrRefused = errors.New("refused by the tool policy")

// A File is the policy file, read again whenever it changes (its size,
// time or inode). A missing file that was named explicitly, or one that
// does not parse, refuses every proxied call and says why (errors wrap
// ErrRefused): a broken policy never falls open. Current returns a nil
// *Policy, which allows everything, when there is no file.
type File = opfile.File[*Policy]

// Open returns the policy file at path, or when path is empty, at
// policy.json (else policy.toml) in stateDir, where its absence means no
// policy. Nothing is read until Current; log receives a line each time
// the file is read again.
func Open(path, stateDir string, log *slog.Logger) *File {
	return opfile.New(opfile.Options[*Policy]{
		Path: path, Dir: stateDir, Defaults: []string{"policy.json", "policy.toml"},
		What: "policy file", Env: "MCP_BRIDGE_POLICY", Limit: maxPolicyBytes, Parse: parse,
		MissingRefusal: "; every proxied tool call is refused until it does",
		InvalidRefusal: ", so every proxied tool call is refused",
		Sentinel:       ErrRefused,
		OnLoad: func(path string, p *Policy, err error) {
			switch {
			case err != nil:
				log.Error("the tool policy cannot be used: every proxied tool call is refused until it is fixed", "file", path, "err", err)
			case p != nil:
				log.Info("tool policy loaded", "file", path, "servers", len(p.Servers), "max_tool_calls", p.CallLimit())
			}
		},
	})
}
