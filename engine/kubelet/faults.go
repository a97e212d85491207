package kubelet

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/engine/kubelet/images"
	netsim "github.com/podtrace/podtrace/engine/kubelet/network/sim"
	"github.com/podtrace/podtrace/stages"
)

// The node-side stages' fault variants are listed in stages.Variants; each
// function below turns a fail or flake fault into its stage's realistic
// failure (the default variant when the name is empty or unknown).

// kubeletFault is the kubelet stage's failure: a volume that cannot mount.
func kubeletFault(f stages.Fault, pod *v1.Pod) (string, error) {
	vol := "kube-api-access"
	if len(pod.Spec.Volumes) > 0 {
		vol = pod.Spec.Volumes[0].Name
	}
	if f.Variant == "missing-secret" {
		return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : secret %q not found", vol, vol)
	}
	return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : configmap %q not found", vol, "kube-root-ca.crt")
}

// sandboxFault is the runtime's error when the pause container cannot start.
func sandboxFault(stages.Fault) string {
	return `rpc error: code = Unknown desc = failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error setting cgroup config for procHooks process: unable to freeze: unknown`
}

// cniFault is the network plugin's error.
func cniFault(f stages.Fault, k *Kubelet) error {
	if f.Variant == "plugin-error" {
		return errors.New(`plugin type="bridge" name="podtrace" failed (add): failed to set bridge addr: could not add IP address to "cni0": permission denied`)
	}
	return fmt.Errorf(`plugin type="bridge" name="podtrace" failed (add): failed to allocate for range 0: no IP addresses available in range set: %s`, rangeSet(k.cfg.PodCIDR))
}

// rangeSet renders a /24-style pod CIDR as host-local's range set.
func rangeSet(cidr string) string {
	if pl, err := netsim.New(cidr, nil, 0); err == nil {
		return pl.RangeSet()
	}
	return cidr
}

// pullFault is what containerd reports for a failed pull.
func pullFault(f stages.Fault, ref images.Reference) error {
	full := ref.String()
	prefix := fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q", full, full)
	switch f.Variant {
	case "unauthorized":
		return fmt.Errorf("rpc error: code = Unknown desc = %s: pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed", prefix)
	case "unreachable":
		return fmt.Errorf("rpc error: code = Unknown desc = %s: failed to do request: Head %q: dial tcp 104.18.0.1:443: i/o timeout", prefix,
			fmt.Sprintf("https://%s/v2/%s/manifests/%s", registryHost(ref.Domain), ref.Path, ref.Tag))
	}
	return fmt.Errorf("rpc error: code = NotFound desc = %s: %s: not found", prefix, full)
}

func registryHost(domain string) string {
	if domain == images.DefaultDomain {
		return "registry-1.docker.io"
	}
	return domain
}

// createFault is CreateContainer's failure: a config error by default.
func createFault(f stages.Fault, c *ctr) (reason, msg string) {
	if f.Variant == "create-error" {
		return "CreateContainerError", fmt.Sprintf("failed to create containerd container: failed to mount rootfs component: no such file or directory (container %s)", c.spec.Name)
	}
	return "CreateContainerConfigError", fmt.Sprintf("configmap %q not found", c.spec.Name+"-config")
}

// startFault is StartContainer's failure: the process cannot start.
func startFault(_ stages.Fault, c *ctr) error {
	cmd := "/docker-entrypoint.sh"
	if len(c.spec.Command) > 0 {
		cmd = c.spec.Command[0]
	}
	return fmt.Errorf("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: %q: executable file not found in $PATH: unknown", cmd)
}

// hookFault is a postStart hook that exits 1.
func hookFault(_ stages.Fault, pod *v1.Pod, c *ctr) string {
	cmd := []string{"sh", "-c", "exit 1"}
	return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: command '%s' exited with 1: , message: %q",
		cmd, c.spec.Name, formatPod(pod), "sh -c exit 1", "")
}
