package model

import (
	"errors"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// ErrNotFound is returned for unknown sandbox or container IDs.
var ErrNotFound = errors.New("not found")

// SandboxConfig describes the pod a sandbox is for.
type SandboxConfig struct {
	Name, Namespace, UID string
	Attempt              int
	Hostname             string
	CgroupParent         string
	Annotations          map[string]string
}

// AuthConfig carries registry credentials from an imagePullSecret.
type AuthConfig struct {
	Username, Password, Auth string
}

// Image is an image present on the node.
type Image struct {
	// Ref is the normalized reference pulled, e.g. docker.io/library/nginx:1.27.
	Ref string
	// ID is the image's content digest, "sha256:...".
	ID string
	// RepoDigest is name@digest, what a pod status reports as imageID.
	RepoDigest string
	Size       int64
}

// ContainerConfig describes a container to create.
type ContainerConfig struct {
	Name    string
	Attempt int
	Image   string // normalized image reference
	Command []string
	Args    []string
	Env     map[string]string
	// Mounts are the files and volumes the kubelet mounted for it.
	Mounts []proc.Mount
	// UID and GID are the user and group its processes run as.
	UID, GID int64
	// Security is its privileged flag, no_new_privs and capabilities.
	Security proc.Security
	// Sysctls are its pod's sysctls (CRI's LinuxPodSandboxConfig.Sysctls):
	// its /proc/sys files show them.
	Sysctls map[string]string
	// ReadOnlyRoot makes its root file system read-only.
	ReadOnlyRoot bool
	// WorkingDir is its processes' working directory ("/" when empty).
	WorkingDir string
	// Annotations carry the simulated runtime's hints, e.g. podtrace.dev/exit-after.
	Annotations map[string]string
	// Stdin, StdinOnce and TTY are the container spec's, as CRI's
	// ContainerConfig carries them for attach: the process gets a stdin
	// (closed when an attach's input ends, with StdinOnce and no TTY) and a
	// terminal.
	Stdin, StdinOnce, TTY bool
	// Net is where its servers listen: its pod's address (nil for none).
	Net proc.Network
	// Resources are its CPU and memory settings, as the kubelet gives
	// them (nil for none): its cgroup files show them.
	Resources *runtimeapi.LinuxContainerResources
}

// State is a container's lifecycle state.
type State string

// Container states, as CRI names them.
const (
	StateCreated State = "CONTAINER_CREATED"
	StateRunning State = "CONTAINER_RUNNING"
	StateExited  State = "CONTAINER_EXITED"
)

// ContainerStatus is a container's state as the runtime sees it.
type ContainerStatus struct {
	ID         string
	Name       string
	State      State
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int
	// Reason is why it exited: Completed, Error, OOMKilled.
	Reason  string
	Message string
	Image   string
	ImageID string
}

// ExecResult is the outcome of ExecSync.
type ExecResult struct {
	Stdout, Stderr string
	ExitCode       int
}

// LogLine is one line a container wrote.
type LogLine struct {
	Time   time.Time
	Stream string // stdout or stderr
	Text   string
	// Partial marks the end of the output without a final newline, as
	// CRI's log format tags it (P).
	Partial bool
}
