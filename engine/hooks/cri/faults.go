package cri

import (
	"errors"
	"fmt"
	"strings"

	"github.com/distribution/reference"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	utilexec "k8s.io/utils/exec"

	"github.com/podtrace/podtrace/stages"
)

// The node stages' fault variants (stages.Variants) become the errors a
// containerd runtime returns over CRI; the kubelet wraps them into its own
// reasons and Events.

// sandboxError is RunPodSandbox's failure: the pause container cannot start.
func sandboxError(stages.Fault) error {
	return status.Error(codes.Unknown, "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error setting cgroup config for procHooks process: unable to freeze: unknown")
}

// NetworkError is the bridge plugin's CNI ADD failure of a cni fault, for
// the pod range set rangeSet ("10.244.1.1-10.244.1.254").
func NetworkError(f stages.Fault, rangeSet string) error {
	if f.Variant == stages.VariantPluginError {
		return errors.New(`failed to set bridge addr: could not add IP address to "cni0": permission denied`)
	}
	return fmt.Errorf(`failed to allocate for range 0: no IP addresses available in range set: %s`, rangeSet)
}

// pluginError is a CNI plugin's failure as libcni reports it, naming the
// plugin of the network's configuration that failed, and the network when
// network is set (containerd 1.7 and later; 1.6 names only the plugin).
type pluginError struct {
	plugin, network string
	err             error
}

func (e *pluginError) Error() string {
	if e.network == "" {
		return fmt.Sprintf(`plugin type=%q failed (add): %v`, e.plugin, e.err)
	}
	return fmt.Sprintf(`plugin type=%q name=%q failed (add): %v`, e.plugin, e.network, e.err)
}

func (e *pluginError) Unwrap() error { return e.err }

// pullError is what containerd reports for a failed pull of image.
func pullError(f stages.Fault, image string) error {
	full := normalize(image)
	prefix := fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q", full, full)
	switch f.Variant {
	case stages.VariantUnauthorized:
		return status.Errorf(codes.Unknown, "%s: pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed", prefix)
	case stages.VariantUnreachable:
		host, _, _ := strings.Cut(full, "/")
		if host == "docker.io" {
			host = "registry-1.docker.io"
		}
		return status.Errorf(codes.Unknown, "%s: failed to do request: Head \"https://%s/v2/...\": dial tcp 104.18.0.1:443: i/o timeout", prefix, host)
	}
	return status.Errorf(codes.NotFound, "%s: %s: not found", prefix, full)
}

// normalize names an image as containerd does: docker.io/library/nginx:latest.
func normalize(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return image
	}
	return reference.TagNameOnly(named).String()
}

// createError is CreateContainer's failure.
func createError(_ stages.Fault, name string) error {
	return status.Errorf(codes.Unknown, "failed to create containerd container: failed to mount rootfs component: no such file or directory (container %s)", name)
}

// startError is StartContainer's failure: the process cannot start.
func startError(_ stages.Fault, command []string) error {
	cmd := "/docker-entrypoint.sh"
	if len(command) > 0 {
		cmd = command[0]
	}
	return status.Errorf(codes.Unknown, "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: %q: executable file not found in $PATH: unknown", cmd)
}

// exitError is a command that exited with code, as CRI's remote client
// reports it from ExecSync.
func exitError(cmd []string, code int) error {
	return utilexec.CodeExitError{Err: fmt.Errorf("command '%s' exited with %d: ", strings.Join(cmd, " "), code), Code: code}
}
