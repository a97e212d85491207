package upstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/kubernetes/pkg/proxy/nftables"
	"sigs.k8s.io/knftables"
)

// proxyTable is the nftables table kube-proxy's nftables mode writes, in
// the ip and ip6 families (pkg/proxy/nftables' kubeProxyTable), and the
// one its CleanupLeftovers deletes in both.
const proxyTable = "kube-proxy"

// ClaimKubeProxyTables makes kube-proxy's nftables tables in this network
// namespace this process's, recording its pid in ownerFile (StartKubeProxy
// with OwnerFile claims them too; claiming again is harmless). It fails
// where nft cannot be run. Tables that a podtrace which
// has exited left (its pid is in ownerFile, and gone) are removed first,
// with upstream's cleanup. Tables of anything else (another cluster's
// kube-proxy on this machine, a running podtrace) are left alone: the
// claim fails, saying whose they are.
func ClaimKubeProxyTables(ctx context.Context, ownerFile string) error {
	owner, known := readOwner(ownerFile)
	if known && owner != os.Getpid() && alive(owner) {
		return fmt.Errorf("podtrace pid %d runs kube-proxy on this machine already (%s)", owner, ownerFile)
	}
	existing, err := tablesPresent(ctx)
	if err != nil {
		return err
	}
	if len(existing) > 0 {
		if !known {
			return fmt.Errorf("this machine has nftables table %s already (another cluster's kube-proxy?); podtrace leaves it alone",
				strings.Join(existing, " and "))
		}
		nftables.CleanupLeftovers(ctx) // a podtrace that exited left them
	}
	if err := os.MkdirAll(filepath.Dir(ownerFile), 0o755); err != nil {
		return err
	}
	return os.WriteFile(ownerFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// ReleaseKubeProxyTables removes kube-proxy's tables (upstream's cleanup)
// and this process's claim on them (KubeProxy.Stop does it for a running
// kube-proxy).
func ReleaseKubeProxyTables(ownerFile string) {
	nftables.CleanupLeftovers(context.Background())
	if owner, _ := readOwner(ownerFile); owner == os.Getpid() {
		_ = os.Remove(ownerFile)
	}
}

// tablesPresent lists kube-proxy's tables that exist ("ip kube-proxy").
func tablesPresent(ctx context.Context) ([]string, error) {
	var present []string
	for _, family := range []knftables.Family{knftables.IPv4Family, knftables.IPv6Family} {
		nft, err := knftables.New(family, proxyTable)
		if err != nil {
			return nil, err
		}
		_, err = nft.List(ctx, "chains")
		switch {
		case err == nil:
			present = append(present, string(family)+" "+proxyTable)
		case !knftables.IsNotFound(err):
			return nil, err
		}
	}
	return present, nil
}

// readOwner reads the pid in ownerFile; known is false without one.
func readOwner(ownerFile string) (pid int, known bool) {
	b, err := os.ReadFile(ownerFile)
	if err != nil {
		return 0, false
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}

// alive reports whether a process with pid runs.
func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
