package agnhost

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// TestAgnhostEtcHosts runs agnhost etc-hosts as the Kubelet hostAliases
// spec does: it prints the kubelet's /etc/hosts, aliases included, and
// panics without one.
func TestAgnhostEtcHosts(t *testing.T) {
	const hosts = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n"
	hostsFile := filepath.Join(t.TempDir(), "etc-hosts")
	if err := os.WriteFile(hostsFile, []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		mounts      []proc.Mount
		code        int
		out, stderr string
	}{
		{"the kubelet's hosts file", []proc.Mount{{ContainerPath: "/etc/hosts", HostPath: hostsFile}}, 0, hosts + "\n", ""},
		{"none", nil, 2, "", "panic: open /etc/hosts: no such file or directory\n"},
	} {
		var out, errw bytes.Buffer
		code, err := proc.Run(t.Context(), proc.Process{Programs: Programs(), Argv: []string{"/agnhost", "etc-hosts"}, FS: proc.NewFS(tc.mounts, false),
			Image: agnhostImage, Stdout: &out, Stderr: &errw})
		if err != nil || code != tc.code || out.String() != tc.out || !strings.HasPrefix(errw.String(), tc.stderr) {
			t.Errorf("%s: exit %d (%v), stdout %q, stderr %q; want %d, %q, %q...", tc.name, code, err, out.String(), errw.String(), tc.code, tc.out, tc.stderr)
		}
	}
}
