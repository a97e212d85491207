package cni

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/engine/kubelet/network"
	"github.com/podtrace/podtrace/engine/kubelet/network/cni/netns"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("PODTRACE_REAL_CONTAINERS") == "1" {
			t.Fatal("PODTRACE_REAL_CONTAINERS=1 (.ci/run) but not root: these tests must run")
		}
		t.Skip("CNI needs root")
	}
}

// newPlugin returns a plugin whose sandboxes' namespaces live in dir/pods.
func newPlugin(t *testing.T, override []byte) (*Plugin, string) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods")
	p, err := New(Config{Node: "node-1", PodCIDR: "10.244.7.0/24", Dir: filepath.Join(dir, "cni"), ConfigOverride: override,
		NetNSPath: func(id string) (string, error) { return filepath.Join(pods, id), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, pods
}

func TestSetUpTearDown(t *testing.T) {
	needRoot(t)
	p, pods := newPlugin(t, nil)
	ctx := context.Background()
	var results []network.Result
	for _, id := range []string{"sb1", "sb2"} {
		ns, err := netns.Create(filepath.Join(pods, id))
		if err != nil {
			t.Fatal(err)
		}
		defer netns.Remove(ns)
		res, err := p.SetUp(ctx, network.Pod{Namespace: "default", Name: id, UID: "u-" + id, SandboxID: id})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
		if !strings.HasPrefix(res.IP, "10.244.7.") || res.Gateway != "10.244.7.1" || res.Interface != "eth0" || !strings.HasPrefix(res.HostVeth, "veth") {
			t.Fatalf("result %+v", res)
		}
		// The pod's namespace has eth0 with that address.
		var addrs []string
		_ = netns.Do(ns, func() error {
			ifc, err := net.InterfaceByName("eth0")
			if err != nil {
				return err
			}
			as, _ := ifc.Addrs()
			for _, a := range as {
				addrs = append(addrs, a.String())
			}
			return nil
		})
		if len(addrs) == 0 || !strings.HasPrefix(addrs[0], res.IP+"/") {
			t.Fatalf("eth0 addresses in pod namespace %v, want %s", addrs, res.IP)
		}
	}
	if results[0].IP == results[1].IP {
		t.Fatalf("two pods got %s", results[0].IP)
	}
	// The node namespace reaches a pod; the host namespace has no bridge.
	if _, err := net.InterfaceByName("cni0"); err == nil {
		t.Fatal("bridge cni0 appeared in the host namespace")
	}
	err := netns.Do(p.NodeNetNS(), func() error {
		ln, err := net.Listen("tcp", ":0")
		if err != nil {
			return err
		}
		defer ln.Close()
		_, err = net.InterfaceByName("cni0")
		return err
	})
	if err != nil {
		t.Fatalf("node namespace: %v", err)
	}
	if a, _ := p.Allocations(); len(a) != 2 {
		t.Fatalf("allocations %v, want 2", a)
	}
	for _, id := range []string{"sb1", "sb2"} {
		pod := network.Pod{Namespace: "default", Name: id, SandboxID: id}
		if err := p.TearDown(ctx, pod); err != nil {
			t.Fatal(err)
		}
		if err := p.TearDown(ctx, pod); err != nil {
			t.Fatalf("second TearDown: %v", err)
		}
	}
	if a, _ := p.Allocations(); len(a) != 0 {
		t.Fatalf("allocations left after DEL: %v", a)
	}
}

func TestBrokenConfigFailsAtSetUp(t *testing.T) {
	needRoot(t)
	p, pods := newPlugin(t, []byte(`{"cniVersion":"1.0.0","name":"broken","plugins":[{"type":"bridge","ipam":{"type":"no-such-ipam"}}]}`))
	ns, err := netns.Create(filepath.Join(pods, "sb"))
	if err != nil {
		t.Fatal(err)
	}
	defer netns.Remove(ns)
	_, err = p.SetUp(context.Background(), network.Pod{Namespace: "default", Name: "p", SandboxID: "sb"})
	if err == nil || !strings.Contains(err.Error(), "no-such-ipam") {
		t.Fatalf("SetUp with a broken config: %v", err)
	}
	if errors.Is(err, os.ErrNotExist) {
		t.Log(err)
	}
}

func TestSetUpFaultIsARealFailedAdd(t *testing.T) {
	needRoot(t)
	p, pods := newPlugin(t, nil)
	for _, tc := range []struct{ variant, want string }{
		{"ipam-exhausted", "no IP addresses available in range set: 10.244.7.1-10.244.7.1"},
		{"plugin-error", `failed to find plugin "podtrace-missing-ipam"`},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			ns, err := netns.Create(filepath.Join(pods, tc.variant))
			if err != nil {
				t.Fatal(err)
			}
			defer netns.Remove(ns)
			err = p.SetUpFault(context.Background(), network.Pod{Namespace: "default", Name: "p", SandboxID: tc.variant}, tc.variant)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SetUpFault(%s) = %v, want %q", tc.variant, err, tc.want)
			}
			if a, _ := p.Allocations(); len(a) != 0 {
				t.Fatalf("allocations after a failed ADD: %v", a)
			}
		})
	}
}
