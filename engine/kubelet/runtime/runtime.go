// Package runtime is the kubelet's view of a container runtime: a small,
// CRI-shaped interface (sandboxes, images, containers, exec, logs) that the
// simulated runtime implements today and a containerd runtime can implement
// later. Network setup is separate (package network), as CNI is.
package runtime

import (
	"context"
	"errors"
	"time"
)

// Runtime is the CRI subset the kubelet uses. Every call may block for the
// operation's latency; all honour ctx.
type Runtime interface {
	// RunPodSandbox creates and starts the pod's sandbox (pause container) and returns its ID.
	RunPodSandbox(ctx context.Context, cfg SandboxConfig) (string, error)
	// StopPodSandbox stops the sandbox and every container in it.
	StopPodSandbox(ctx context.Context, id string) error
	// RemovePodSandbox removes a stopped sandbox.
	RemovePodSandbox(ctx context.Context, id string) error

	// PullImage pulls image (a normalized reference) and returns the image.
	PullImage(ctx context.Context, image string, auth *AuthConfig) (Image, error)
	// ImageStatus returns the image if it is present on the node, nil if not.
	ImageStatus(ctx context.Context, image string) (*Image, error)

	// CreateContainer creates a container in the sandbox and returns its ID.
	CreateContainer(ctx context.Context, sandboxID string, cfg ContainerConfig) (string, error)
	// StartContainer starts a created container.
	StartContainer(ctx context.Context, id string) error
	// StopContainer sends the stop signal and kills the container after timeout.
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
	// RemoveContainer removes a stopped container.
	RemoveContainer(ctx context.Context, id string) error
	// ContainerStatus returns the container's current state.
	ContainerStatus(ctx context.Context, id string) (ContainerStatus, error)
	// ExecSync runs cmd in the container and returns its output and exit code.
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error)
	// ContainerLogs returns the lines the container has written so far.
	ContainerLogs(ctx context.Context, id string) ([]LogLine, error)
	// Events returns a channel of container state changes (CRI's
	// GetContainerEvents), closed when ctx is done.
	Events(ctx context.Context) <-chan ContainerEvent
}

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
	// Annotations carry the simulated runtime's hints, e.g. podtrace.dev/exit-after.
	Annotations map[string]string
	// Resources are the container's cgroup limits; nil means none. The
	// simulated runtime ignores them.
	Resources *Resources
	// Stdin, StdinOnce and TTY are the container spec's, as CRI's
	// ContainerConfig carries them for attach: the process gets a stdin
	// (closed when an attach's input ends, with StdinOnce and no TTY) and a
	// terminal.
	Stdin, StdinOnce, TTY bool
}

// Resources are a container's Linux cgroup settings, as CRI's
// LinuxContainerResources carries them (zero means unset).
type Resources struct {
	CPUShares, CPUQuota, CPUPeriod int64
	MemoryLimitBytes               int64
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
}

// ContainerEvent reports a container state change.
type ContainerEvent struct {
	ContainerID string
	SandboxID   string
	State       State
	Time        time.Time
}
