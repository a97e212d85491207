package kubectle2e

import (
	"strings"
	"testing"
)

// TestServiceAllocationsKubectl checks with kubectl that a Service's
// cluster IP and node port are held exactly while a stored Service holds
// them: a server-side dry run takes nothing, a type change to ClusterIP
// gives the node port back at once, and so does a delete.
func TestServiceAllocationsKubectl(t *testing.T) {
	eachKubectl(t, func(t *testing.T, _ *cluster, k *kubectl, suffix string) {
		// 1.33 → 30033 and 10.96.0.133, 1.27 → 30027 and 10.96.0.127: in
		// the low bands of the ranges, which upstream's allocators hand out
		// only when the rest is full, so that the Services other tests make
		// on the same cluster cannot take them first.
		testServiceDryRunAndRelease(t, k, suffix, "300"+suffix[1:], "10.96.0."+suffix)
	})
}

func testServiceDryRunAndRelease(t *testing.T, k *kubectl, suffix, nodePort, ip string) {
	spec := "-o=jsonpath={.spec.type} {.spec.clusterIP} {.spec.ports[0].nodePort}"
	dry := k.ok("create", "service", "nodeport", "dry-"+suffix, "--tcp=80", "--node-port="+nodePort, "--dry-run=server", spec)
	if want := "NodePort 10.96.0.0 " + nodePort; dry != want {
		t.Errorf("dry-run create = %q, want %q (upstream's placeholder address)", dry, want)
	}
	k.fails("get", "svc", "dry-"+suffix)
	dry = k.ok("create", "service", "clusterip", "dryip-"+suffix, "--tcp=80", "--clusterip="+ip, "--dry-run=server", spec)
	if want := "ClusterIP " + ip + " "; dry != want {
		t.Errorf("dry-run create with a cluster IP = %q, want %q", dry, want)
	}

	// What the dry runs asked for is free.
	k.ok("create", "service", "clusterip", "ip-"+suffix, "--tcp=80", "--clusterip="+ip)
	web := "np-" + suffix
	if got := k.ok("create", "service", "nodeport", web, "--tcp=80", "--node-port="+nodePort, spec); !strings.HasSuffix(got, " "+nodePort) {
		t.Fatalf("create with the dry run's node port = %q", got)
	}
	errOut := k.fails("create", "service", "nodeport", "clash-"+suffix, "--tcp=80", "--node-port="+nodePort)
	if want := `spec.ports[0].nodePort: Invalid value: ` + nodePort + `: provided port is already allocated`; !strings.Contains(errOut, want) {
		t.Errorf("taken node port:\n%s\nwant %s", errOut, want)
	}

	// NodePort → ClusterIP gives the node port back at once.
	k.ok("patch", "svc", web, "-p", `{"spec":{"type":"ClusterIP"}}`)
	if got := k.ok("get", "svc", web, spec); !strings.HasPrefix(got, "ClusterIP ") || !strings.HasSuffix(got, " ") {
		t.Errorf("after the type change: %q, want a ClusterIP Service without node port", got)
	}
	other := "other-" + suffix
	k.ok("create", "service", "nodeport", other, "--tcp=80", "--node-port="+nodePort)

	// A delete gives it back at once too.
	k.ok("delete", "svc", other)
	k.ok("create", "service", "nodeport", other, "--tcp=80", "--node-port="+nodePort)
}
