package kube

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// The route flags of the kernel's route tables (linux/route.h).
const (
	rtfUp     = 0x0001
	rtfReject = 0x0200
)

// EgressOf decides whether a sandbox pod has a way out: route and
// route6 are its /proc/net/route and /proc/net/ipv6_route as read from
// inside ("" when missing), pols the NetworkPolicies of its namespace and
// podLabels its labels. A default route or a route through a gateway is a
// way out (a route to the pod's own subnet is not; routes that are down,
// reject routes and routes on lo are not routes out). With a way out,
// the pod's egress is denied when a policy selecting it is of type
// Egress with no rules, and no policy selecting it allows any egress.
func EgressOf(route, route6 string, pols []networkingv1.NetworkPolicy, podLabels map[string]string) (engine.KubeEgress, error) {
	out, err := kubeRoutesOut(route)
	if err != nil {
		return engine.KubeEgress{}, err
	}
	out6, err := kubeRoutes6Out(route6)
	if err != nil {
		return engine.KubeEgress{}, err
	}
	e := engine.KubeEgress{Routes: append(out, out6...)}
	if len(e.Routes) == 0 {
		return e, nil
	}
	for _, p := range pols {
		if !kubeEgressPolicy(&p) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil {
			return engine.KubeEgress{}, fmt.Errorf("reading network policy %s's pod selector: %w", p.Name, err)
		}
		if !sel.Matches(labels.Set(podLabels)) {
			continue
		}
		if len(p.Spec.Egress) == 0 {
			e.Denying = append(e.Denying, p.Name)
		} else {
			e.Allowing = append(e.Allowing, p.Name)
		}
	}
	slices.Sort(e.Denying)
	slices.Sort(e.Allowing)
	e.Verdict = engine.KubeEgressOpen
	if len(e.Denying) > 0 && len(e.Allowing) == 0 {
		e.Verdict = engine.KubeEgressDenied
	}
	return e, nil
}

// kubeEgressPolicy reports whether p governs egress: its policyTypes
// hold Egress, or (policyTypes unset, as the API server defaults them)
// it has egress rules.
func kubeEgressPolicy(p *networkingv1.NetworkPolicy) bool {
	if len(p.Spec.PolicyTypes) == 0 {
		return len(p.Spec.Egress) > 0
	}
	return slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
}

// kubeRoutesOut returns the routes out of /proc/net/route's text:
// "Iface Destination Gateway Flags RefCnt Use Metric Mask …", addresses
// in hexadecimal, in the kernel's (little-endian) byte order.
func kubeRoutesOut(text string) ([]string, error) {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) == 0 {
			continue // the header
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("reading /proc/net/route: line %d has %d fields: %q", i+1, len(f), line)
		}
		dst, err1 := kubeRouteAddr4(f[1])
		gw, err2 := kubeRouteAddr4(f[2])
		flags, err3 := strconv.ParseUint(f[3], 16, 32)
		mask, err4 := kubeRouteAddr4(f[7])
		if err := cmp.Or(err1, err2, err3, err4); err != nil {
			return nil, fmt.Errorf("reading /proc/net/route: line %d: %w", i+1, err)
		}
		bits := kubeMaskBits(mask)
		if r := kubeRouteOut(f[0], flags, netip.PrefixFrom(dst, bits), gw); r != "" {
			out = append(out, r)
		}
	}
	return out, nil
}

// kubeRoutes6Out returns the routes out of /proc/net/ipv6_route's text:
// "destination prefix-length source prefix-length next-hop metric refcnt
// use flags iface", addresses as 32 hexadecimal digits.
func kubeRoutes6Out(text string) ([]string, error) {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 10 {
			return nil, fmt.Errorf("reading /proc/net/ipv6_route: line %d has %d fields: %q", i+1, len(f), line)
		}
		dst, err1 := kubeRouteAddr6(f[0])
		bits, err2 := strconv.ParseUint(f[1], 16, 8)
		gw, err3 := kubeRouteAddr6(f[4])
		flags, err4 := strconv.ParseUint(f[8], 16, 32)
		if err := cmp.Or(err1, err2, err3, err4); err != nil {
			return nil, fmt.Errorf("reading /proc/net/ipv6_route: line %d: %w", i+1, err)
		}
		if r := kubeRouteOut(f[9], flags, netip.PrefixFrom(dst, int(bits)), gw); r != "" {
			out = append(out, r)
		}
	}
	return out, nil
}

// kubeRouteOut describes a route that is a way out, or returns "": up,
// not a reject route, not on lo, and either the default route or one
// through a gateway.
func kubeRouteOut(iface string, flags uint64, dst netip.Prefix, gw netip.Addr) string {
	if flags&rtfUp == 0 || flags&rtfReject != 0 || iface == "lo" {
		return ""
	}
	where := dst.String()
	if dst.Bits() == 0 {
		where = "default"
	}
	switch {
	case !gw.IsUnspecified():
		return iface + " " + where + " via " + gw.String()
	case dst.Bits() == 0:
		return iface + " default"
	}
	return ""
}

// kubeRouteAddr4 decodes an IPv4 address of /proc/net/route.
func kubeRouteAddr4(s string) (netip.Addr, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 4 {
		return netip.Addr{}, fmt.Errorf("not an address: %q", s)
	}
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], binary.LittleEndian.Uint32(b))
	return netip.AddrFrom4(a), nil
}

// kubeRouteAddr6 decodes an IPv6 address of /proc/net/ipv6_route.
func kubeRouteAddr6(s string) (netip.Addr, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 16 {
		return netip.Addr{}, fmt.Errorf("not an address: %q", s)
	}
	return netip.AddrFrom16([16]byte(b)), nil
}

// kubeMaskBits returns the prefix length of a netmask (its leading ones).
func kubeMaskBits(mask netip.Addr) int {
	b := mask.As4()
	n := 0
	for _, x := range b {
		for bit := 7; bit >= 0 && x&(1<<bit) != 0; bit-- {
			n++
		}
		if x != 0xff {
			break
		}
	}
	return n
}
