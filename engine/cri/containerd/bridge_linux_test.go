package containerd

import (
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestMakeBridge takes over the pod range of a bridge whose podtrace is
// gone, gives the new bridge the pods' gateway address and passes its
// traffic to netfilter, and refuses the range of one whose podtrace
// still runs.
func TestMakeBridge(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("PODTRACE_REAL_CONTAINERS") == "1" {
			t.Fatal("PODTRACE_REAL_CONTAINERS=1 (.ci/run) but not root: this test must run")
		}
		t.Skip("bridges need root")
	}
	const cidr = "10.251.7.0/24"
	addBridge := func(name, alias string) {
		t.Helper()
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
		if err := netlink.LinkAdd(br); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = deleteBridge(name) })
		addr, _ := netlink.ParseAddr("10.251.7.1/24")
		if err := netlink.LinkSetAlias(br, alias); err != nil {
			t.Fatal(err)
		}
		if err := netlink.AddrAdd(br, addr); err != nil {
			t.Fatal(err)
		}
		if err := netlink.LinkSetUp(br); err != nil {
			t.Fatal(err)
		}
	}
	// A pid no process has (above the kernel's pid_max).
	addBridge("pt-testgone", ownerAlias+"99999999")
	t.Cleanup(func() { _ = deleteBridge("pt-testnew") })
	gw, err := makeBridge("pt-testnew", cidr)
	if err != nil {
		t.Fatalf("over a dead podtrace's bridge: %v", err)
	}
	if gw.String() != "10.251.7.1" {
		t.Errorf("gateway %s, want 10.251.7.1", gw)
	}
	if l, err := netlink.LinkByName("pt-testnew"); err != nil {
		t.Fatal(err)
	} else if addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4); len(addrs) != 1 || addrs[0].IPNet.String() != "10.251.7.1/24" {
		t.Errorf("bridge addresses %v, want 10.251.7.1/24 (as the bridge plugin sets its gateway)", addrs)
	}
	if b, err := os.ReadFile("/sys/class/net/pt-testnew/bridge/nf_call_iptables"); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Errorf("nf_call_iptables %q %v, want 1", b, err)
	}
	if _, err := netlink.LinkByName("pt-testgone"); err == nil {
		t.Error("the dead podtrace's bridge is still there")
	}
	if err := deleteBridge("pt-testnew"); err != nil {
		t.Fatal(err)
	}
	addBridge("pt-testlive", ownerAlias+"1") // init: alive
	_, err = makeBridge("pt-testnew", cidr)
	if err == nil || !strings.Contains(err.Error(), "pod range "+cidr+" overlaps the route to "+cidr) {
		t.Fatalf("over a live podtrace's bridge: %v, want the overlap refused", err)
	}
}
