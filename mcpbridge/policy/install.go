package policy

// The network of package installs: the hosts pip may reach, whatever
// the network section allows, and what of the section applies to them.

import "slices"

// installMinBytes is the least one package install may move, whatever the
// policy's max_bytes_per_call: wheels of the usual data libraries are tens
// of megabytes each.
const installMinBytes = 4 << 30

// InstallHosts are the hosts ("host:port") a package install reaches.
type InstallHosts struct {
	// Index are the package indexes' hosts: the only hosts an inject rule
	// adds its header to during an install, and on GET and HEAD only.
	// Zero: none.
	Index []string
	// Files are the hosts the indexes keep their files on (PyPI's
	// files.pythonhosted.org, and those the operator names for another
	// index): reached, never given a secret. Zero: none.
	Files []string
}

// InstallNetwork returns the network package installs get: the hosts h
// names and no other, whatever addresses their names resolve to (the
// operator named them: a company mirror on a private address, an index on
// loopback). The network section's allow entries do not widen it; its deny
// entries, timeouts and max_connections apply, and its inject rules to the
// index hosts only, on GET and HEAD only (CheckMethod). Its byte budget
// (MaxBytesPerCall, counted per install) is the section's
// max_bytes_per_call or 4 GiB, whichever is more. Without a network
// section installs still reach their hosts; a section that did not parse
// refuses them too, as it refuses all egress.
func (p *Policy) InstallNetwork(h InstallHosts) (*Network, error) {
	if p != nil && p.NetworkSection != nil && p.network == nil {
		return p.Network(), nil
	}
	index, err := parseEntries("index", h.Index)
	if err != nil {
		return nil, err
	}
	files, err := parseEntries("files", h.Files)
	if err != nil {
		return nil, err
	}
	base := p.Network() // the policy's, or one with the defaults
	allow := slices.Concat(index, files)
	trusted := map[string]bool{}
	for _, e := range allow {
		trusted[e.raw] = true
	}
	var inject []injectRule
	if base.refuseAll == "" {
		inject = base.inject
	}
	return &Network{allow: allow, deny: base.deny, inject: inject, trusted: trusted, install: index,
		maxConns: base.maxConns, maxBytes: max(base.maxBytes, installMinBytes),
		connectTimeout: base.connectTimeout, idleTimeout: base.idleTimeout}, nil
}
