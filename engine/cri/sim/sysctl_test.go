package sim

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The pod's sysctls, which the kubelet sets on its sandbox, are what the
// container's sysctl reads; /proc/sys is writable only in a privileged
// container.
func TestContainerSeesItsPodsSysctls(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		privileged bool
		script     string
		want       string
	}{
		{"the pod's", false, "sysctl kernel.shm_rmid_forced", "kernel.shm_rmid_forced = 1\n"},
		{"a default", false, "cat /proc/sys/net/ipv4/tcp_syncookies", "1\n"},
		{"unprivileged write", false, "sysctl -w kernel.shm_rmid_forced=0 2>&1; sysctl -n kernel.shm_rmid_forced",
			"sysctl: error setting key 'kernel.shm_rmid_forced': Read-only file system\n1\n"},
		{"privileged write", true, "sysctl -q -w kernel.shm_rmid_forced=0; sysctl -n kernel.shm_rmid_forced", "0\n"},
	} {
		sb := &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{Sysctls: map[string]string{"kernel.shm_rmid_forced": "1"}}}
		r, id := runContainerIn(t, sb, &runtimeapi.ContainerConfig{Image: &runtimeapi.ImageSpec{Image: "busybox:1.36"}, Command: []string{"sleep", "3600"},
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{Privileged: tc.privileged}}})
		out, _, err := r.ExecSync(ctx, id, []string{"sh", "-c", tc.script}, time.Minute)
		if err != nil || string(out) != tc.want {
			t.Errorf("%s: %q: %q, %v; want %q", tc.name, tc.script, out, err, tc.want)
		}
	}
}
