package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// resolvConfPath is where containers see their resolver configuration.
const resolvConfPath = "/etc/resolv.conf"

// resolvPath is where sandbox id's resolv.conf is kept: under Config.Dir,
// as containerd keeps it under its state directory; "" without a Dir.
func (r *Runtime) resolvPath(id string) string {
	if r.cfg.Dir == "" {
		return ""
	}
	return filepath.Join(r.cfg.Dir, "sandboxes", id, "resolv.conf")
}

// writeResolvConf writes sandbox id's resolv.conf as containerd does: from
// the DNS configuration the kubelet computed for the pod (its dnsPolicy:
// the cluster's DNS server and search domains, or the node's), or a copy
// of the host's when there is none.
func (r *Runtime) writeResolvConf(id string, dns *runtimeapi.DNSConfig) error {
	path := r.resolvPath(id)
	if path == "" {
		return nil
	}
	content := []byte(resolvConf(dns.GetServers(), dns.GetSearches(), dns.GetOptions()))
	if dns == nil {
		var err error
		if content, err = os.ReadFile(resolvConfPath); err != nil {
			return fmt.Errorf("failed to copy host's resolv.conf to %q: %w", path, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, content, 0o644)
}

// resolvConf is a resolv.conf's text in containerd's words (its
// parseDNSOptions).
func resolvConf(servers, searches, options []string) string {
	var b strings.Builder
	if len(searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(searches, " "))
	}
	if len(servers) > 0 {
		fmt.Fprintf(&b, "nameserver %s\n", strings.Join(servers, "\nnameserver "))
	}
	if len(options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(options, " "))
	}
	return b.String()
}

// resolvMount is the mount of sandbox id's resolv.conf into a container
// that mounts none of its own there (read-only with a read-only root), as
// containerd adds it; nil when the sandbox has none.
func (r *Runtime) resolvMount(id string, cfg *runtimeapi.ContainerConfig) *runtimeapi.Mount {
	for _, m := range cfg.GetMounts() {
		if filepath.Clean(m.GetContainerPath()) == resolvConfPath {
			return nil
		}
	}
	path := r.resolvPath(id)
	if _, err := os.Stat(path); path == "" || err != nil {
		return nil
	}
	return &runtimeapi.Mount{ContainerPath: resolvConfPath, HostPath: path,
		Readonly: cfg.GetLinux().GetSecurityContext().GetReadonlyRootfs()}
}
