package kube

import (
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// Route tables as a pod's /proc/net reads them.
const (
	routeHeader = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	// Only the pod's own subnet, 10.88.0.0/16: the test cluster's bridge.
	routeSubnet = "eth0\t0000580A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
	// The default route through 10.88.0.1.
	routeDefault = "eth0\t00000000\t0100580A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
	// 203.0.113.0/24 through 10.88.0.1.
	routeViaGateway = "eth0\t007100CB\t0100580A\t0003\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
	// A default route without gateway (a point-to-point link).
	routeDefaultDirect = "tun0\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0\n"
	// Unreachable default (reject), a route that is down, a route on lo.
	routeNotOut = "eth0\t00000000\t0100580A\t0203\t0\t0\t0\t00000000\t0\t0\t0\n" +
		"eth0\t00000000\t0100580A\t0002\t0\t0\t0\t00000000\t0\t0\t0\n" +
		"lo\t00000000\t0100007F\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"

	// The kernel's null route (reject, on lo), ::1 and fe80::/64: no way
	// out.
	route6Local = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200 lo\n" +
		"00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001 lo\n" +
		"fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001 eth0\n" +
		"ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000003 00000000 00000001 eth0\n"
	// The default route through fe80::1.
	route6Default = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 eth0\n"
)

// kubeTestPolicy is a NetworkPolicy of the sandbox namespace.
func kubeTestPolicy(name string, sel metav1.LabelSelector, types []networkingv1.PolicyType, egress ...networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicy {
	return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "sbx"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: sel, PolicyTypes: types, Egress: egress}}
}

// TestKubeEgressOf: routes out are the default route and routes through
// a gateway, not the pod's subnet, reject, down or lo routes; with one,
// the pod's egress is denied only when a policy selecting it is of type
// Egress without rules and none selecting it allows egress.
func TestKubeEgressOf(t *testing.T) {
	podLabels := map[string]string{engine.LabelBridge: "1", engine.LabelSession: "doctor"}
	bridgeSel := metav1.LabelSelector{MatchLabels: map[string]string{engine.LabelBridge: "1"}}
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	egressOnly := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	ingressOnly := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	denyAll := kubeTestPolicy(kubeDenyPolicy, bridgeSel, both)
	allowDNS := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.96.0.10/32"}}}}
	for _, tt := range []struct {
		name          string
		route, route6 string
		pols          []networkingv1.NetworkPolicy
		want          engine.KubeEgressVerdict
		routes        []string
		denying       []string
		allowing      []string
		err           string
	}{
		{name: "own subnet only", route: routeHeader + routeSubnet, route6: route6Local, want: engine.KubeNoRouteOut},
		{name: "own subnet, no policy needed", route: routeHeader + routeSubnet, want: engine.KubeNoRouteOut},
		{name: "no tables (no network)", want: engine.KubeNoRouteOut},
		{name: "header only", route: routeHeader, want: engine.KubeNoRouteOut},
		{name: "reject, down and lo routes", route: routeHeader + routeSubnet + routeNotOut, route6: route6Local, want: engine.KubeNoRouteOut},
		{name: "default route, no policy", route: routeHeader + routeSubnet + routeDefault, route6: route6Local,
			want: engine.KubeEgressOpen, routes: []string{"eth0 default via 10.88.0.1"}},
		{name: "default route, deny-all", route: routeHeader + routeSubnet + routeDefault, pols: []networkingv1.NetworkPolicy{denyAll},
			want: engine.KubeEgressDenied, routes: []string{"eth0 default via 10.88.0.1"}, denying: []string{kubeDenyPolicy}},
		{name: "a route through a gateway, deny-all egress only", route: routeHeader + routeViaGateway,
			pols: []networkingv1.NetworkPolicy{kubeTestPolicy("deny-egress", bridgeSel, egressOnly)},
			want: engine.KubeEgressDenied, routes: []string{"eth0 203.0.113.0/24 via 10.88.0.1"}, denying: []string{"deny-egress"}},
		{name: "a default route without gateway", route: routeHeader + routeDefaultDirect,
			want: engine.KubeEgressOpen, routes: []string{"tun0 default"}},
		{name: "an IPv6 default route", route: routeHeader + routeSubnet, route6: route6Local + route6Default,
			want: engine.KubeEgressOpen, routes: []string{"eth0 default via fe80::1"}},
		{name: "an empty selector selects every pod", route: routeHeader + routeDefault,
			pols: []networkingv1.NetworkPolicy{kubeTestPolicy("default-deny", metav1.LabelSelector{}, egressOnly)},
			want: engine.KubeEgressDenied, routes: []string{"eth0 default via 10.88.0.1"}, denying: []string{"default-deny"}},
		{name: "a selector by expression", route: routeHeader + routeDefault,
			pols: []networkingv1.NetworkPolicy{kubeTestPolicy("exists", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: engine.LabelSession, Operator: metav1.LabelSelectorOpExists}}}, egressOnly)},
			want: engine.KubeEgressDenied, routes: []string{"eth0 default via 10.88.0.1"}, denying: []string{"exists"}},
		{name: "a deny-all selecting other pods", route: routeHeader + routeDefault,
			pols: []networkingv1.NetworkPolicy{kubeTestPolicy("others", metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, both)},
			want: engine.KubeEgressOpen, routes: []string{"eth0 default via 10.88.0.1"}},
		{name: "ingress only", route: routeHeader + routeDefault,
			pols: []networkingv1.NetworkPolicy{kubeTestPolicy("in", bridgeSel, ingressOnly)},
			want: engine.KubeEgressOpen, routes: []string{"eth0 default via 10.88.0.1"}},
		{name: "policy types unset, no egress rules: ingress only", route: routeHeader + routeDefault,
			pols: []networkingv1.NetworkPolicy{kubeTestPolicy("unset", bridgeSel, nil)},
			want: engine.KubeEgressOpen, routes: []string{"eth0 default via 10.88.0.1"}},
		{name: "deny-all and a policy allowing some egress", route: routeHeader + routeDefault,
			pols: []networkingv1.NetworkPolicy{denyAll, kubeTestPolicy("dns", bridgeSel, egressOnly, allowDNS)},
			want: engine.KubeEgressOpen, routes: []string{"eth0 default via 10.88.0.1"}, denying: []string{kubeDenyPolicy}, allowing: []string{"dns"}},
		{name: "policy types unset, egress rules: allowing", route: routeHeader + routeDefault,
			pols: []networkingv1.NetworkPolicy{denyAll, kubeTestPolicy("rules", bridgeSel, nil, allowDNS)},
			want: engine.KubeEgressOpen, routes: []string{"eth0 default via 10.88.0.1"}, denying: []string{kubeDenyPolicy}, allowing: []string{"rules"}},
		{name: "an allowing policy selecting other pods", route: routeHeader + routeDefault,
			pols: []networkingv1.NetworkPolicy{denyAll, kubeTestPolicy("web", metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, egressOnly, allowDNS)},
			want: engine.KubeEgressDenied, routes: []string{"eth0 default via 10.88.0.1"}, denying: []string{kubeDenyPolicy}},
		{name: "both tables' routes out", route: routeHeader + routeDefault + routeViaGateway, route6: route6Default,
			want: engine.KubeEgressOpen, routes: []string{"eth0 default via 10.88.0.1", "eth0 203.0.113.0/24 via 10.88.0.1", "eth0 default via fe80::1"}},
		{name: "an invalid selector", route: routeHeader + routeDefault,
			pols: []networkingv1.NetworkPolicy{kubeTestPolicy("bad", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "k", Operator: "Near"}}}, egressOnly)},
			err: "reading network policy bad's pod selector"},
		{name: "a short line", route: routeHeader + "eth0\t00000000\n", err: "reading /proc/net/route: line 2 has 2 fields"},
		{name: "not hexadecimal", route: routeHeader + "eth0\tnothex!!\t00000000\t0001\t0\t0\t0\t00000000\n", err: "reading /proc/net/route: line 2: not an address"},
		{name: "a short IPv6 line", route6: "00000000000000000000000000000000 00\n", err: "reading /proc/net/ipv6_route: line 1 has 2 fields"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EgressOf(tt.route, tt.route6, tt.pols, podLabels)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v; want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Verdict != tt.want || !slices.Equal(got.Routes, tt.routes) || !slices.Equal(got.Denying, tt.denying) ||
				!slices.Equal(got.Allowing, tt.allowing) {
				t.Errorf("got %+v; want verdict %d, routes %q, denying %q, allowing %q", got, tt.want, tt.routes, tt.denying, tt.allowing)
			}
		})
	}
}

// TestKubeMaskBits: a netmask of /proc/net/route is its prefix length.
func TestKubeMaskBits(t *testing.T) {
	for hex, want := range map[string]int{"00000000": 0, "000000FF": 8, "0000FFFF": 16, "00F0FFFF": 20, "FFFFFFFF": 32} {
		m, err := kubeRouteAddr4(hex)
		if err != nil || kubeMaskBits(m) != want {
			t.Errorf("%s: %d, %v; want %d", hex, kubeMaskBits(m), err, want)
		}
	}
}
