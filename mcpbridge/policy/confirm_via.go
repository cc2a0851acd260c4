package policy

import (
	"fmt"
	"slices"
)

// Who may answer a confirm rule's question (confirm_via).
const (
	ViaClient  = "client"  // the MCP client's user, by elicitation
	ViaConsole = "console" // an operator on the bridge's console
)

// checkConfirmVia checks a confirm_via list named what: ViaClient and
// ViaConsole only, each once, at least one when the list is given.
func checkConfirmVia(what string, via []string) error {
	if via == nil {
		return nil
	}
	if len(via) == 0 {
		return fmt.Errorf("%s is empty; want %q, %q or both", what, ViaClient, ViaConsole)
	}
	for i, v := range via {
		if v != ViaClient && v != ViaConsole {
			return fmt.Errorf("%s has %q; want %q, %q or both", what, v, ViaClient, ViaConsole)
		}
		if slices.Contains(via[:i], v) {
			return fmt.Errorf("%s names %q twice", what, v)
		}
	}
	return nil
}

// ConfirmBy reports who answers the confirm questions of server's
// tools: the client's user, an operator on the console, or both (the
// first answer wins). The server's rule says, else the policy, else the
// client alone.
func (p *Policy) ConfirmBy(server string) (client, console bool) {
	via := []string{ViaClient}
	if p != nil && p.ConfirmVia != nil {
		via = p.ConfirmVia
	}
	if r := p.RuleFor(server); r != nil && r.ConfirmVia != nil {
		via = r.ConfirmVia
	}
	return slices.Contains(via, ViaClient), slices.Contains(via, ViaConsole)
}
