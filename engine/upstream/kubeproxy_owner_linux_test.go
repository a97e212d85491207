package upstream

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

// TestClaimKubeProxyTables claims kube-proxy's nftables tables as a
// podtrace on the host's network does, in a network namespace of the
// test's own: tables nobody claimed, or that a running podtrace claimed,
// are refused and left as they were; those an exited podtrace left are
// removed; the claim is given up with the tables.
func TestClaimKubeProxyTables(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("PODTRACE_REAL_CONTAINERS") == "1" {
			t.Fatal("PODTRACE_REAL_CONTAINERS=1 (.ci/run) but not root: this test must run")
		}
		t.Skip("nftables in a network namespace need root")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft")
	}
	// nft runs in this thread's namespace: everything below stays on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	host, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	ns, err := netns.New()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = netns.Set(host); ns.Close() }()

	ctx := context.Background()
	owner := filepath.Join(t.TempDir(), "run", "kube-proxy.owner")
	nft := func(args ...string) (string, error) {
		out, err := exec.Command("nft", args...).CombinedOutput()
		return string(out), err
	}
	foreign := func(family string) {
		if out, err := nft("add", "table", family, proxyTable, "{ comment \"not podtrace's\" ; }"); err != nil {
			t.Fatalf("nft: %v %s", err, out)
		}
	}
	for _, tc := range []struct {
		name    string
		table   string // a kube-proxy table there before, "" for none
		ownerID int    // the pid in the owner file, 0 for none
		refused string // the claim's error, "" if it succeeds
	}{
		{name: "no tables", table: ""},
		{name: "another kube-proxy's ip table", table: "ip", refused: "has nftables table ip kube-proxy already"},
		{name: "another kube-proxy's ip6 table", table: "ip6", refused: "has nftables table ip6 kube-proxy already"},
		{name: "a running podtrace's", table: "ip", ownerID: 1, refused: "podtrace pid 1 runs kube-proxy on this machine already"},
		{name: "an exited podtrace's", table: "ip", ownerID: 99999999}, // above the kernel's pid_max
		{name: "this podtrace's own, claimed again", table: "ip", ownerID: os.Getpid()},
	} {
		_ = os.Remove(owner)
		if tc.table != "" {
			foreign(tc.table)
		}
		if tc.ownerID != 0 {
			_ = os.MkdirAll(filepath.Dir(owner), 0o755)
			if err := os.WriteFile(owner, []byte(strconv.Itoa(tc.ownerID)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := ClaimKubeProxyTables(ctx, owner)
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%s: claim %v, want refused: %q", tc.name, err, tc.refused)
			}
			if out, err := nft("list", "table", tc.table, proxyTable); err != nil || !strings.Contains(out, "not podtrace's") {
				t.Errorf("%s: the table was touched: %v %s", tc.name, err, out)
			}
			if pid, _ := readOwner(owner); tc.ownerID != 0 && pid != tc.ownerID {
				t.Errorf("%s: owner file names %d, want %d left", tc.name, pid, tc.ownerID)
			}
			_, _ = nft("delete", "table", tc.table, proxyTable)
			continue
		}
		if err != nil {
			t.Errorf("%s: claim: %v", tc.name, err)
			continue
		}
		if present, err := tablesPresent(ctx); err != nil || len(present) > 0 {
			t.Errorf("%s: tables %v %v after the claim, want none", tc.name, present, err)
		}
		if pid, ok := readOwner(owner); !ok || pid != os.Getpid() {
			t.Errorf("%s: owner file names %d, want this process's %d", tc.name, pid, os.Getpid())
		}
		foreign("ip") // as kube-proxy's first sync would make it
		ReleaseKubeProxyTables(owner)
		if present, err := tablesPresent(ctx); err != nil || len(present) > 0 {
			t.Errorf("%s: tables %v %v after the release, want none", tc.name, present, err)
		}
		if _, err := os.Stat(owner); err == nil {
			t.Errorf("%s: owner file left after the release", tc.name)
		}
	}
}
