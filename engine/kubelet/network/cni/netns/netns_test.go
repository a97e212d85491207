//go:build linux

package netns

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestCreateDoRemove(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("PODTRACE_REAL_CONTAINERS") == "1" {
			t.Fatal("PODTRACE_REAL_CONTAINERS=1 (.ci/run) but not root: these tests must run")
		}
		t.Skip("network namespaces need root")
	}
	path := filepath.Join(t.TempDir(), "ns1")
	if _, err := Create(path); err != nil {
		t.Fatal(err)
	}
	var inside []net.Interface
	if err := Do(path, func() error {
		var err error
		inside, err = net.Interfaces()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(inside) != 1 || inside[0].Name != "lo" || inside[0].Flags&net.FlagUp == 0 {
		t.Fatalf("new namespace should hold only lo, up: %+v", inside)
	}
	host, _ := net.Interfaces()
	if len(host) == 1 {
		t.Log("host has only lo; namespace isolation not distinguishable")
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("path still there after Remove: %v", err)
	}
	if err := Remove(path); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
}
