// Package sim serves podtrace's simulated container runtime over CRI, in
// process: the RuntimeService and ImageManagerService a real kubelet drives.
// It keeps its sandboxes, containers and images as CRI records; their
// timing (a seeded latency model scaled by --speed), the simulated
// registries' catalogue and what each container's command does come from
// engine/cri/sim/model, and the containers' processes run as
// engine/cri/sim/proc runs them, with agnhost's programs
// (engine/cri/sim/agnhost), so containers run, exit with a code, write
// logs and answer exec and attach. Pod addresses come from a
// host-local style IPAM over the node's pod CIDR (engine/cri/sim/ipam),
// and this package reports them as the CNI ADD result, writes containers'
// output in CRI log format to the path the kubelet gives, and answers on
// each pod's address.
//
// Pod addresses: the kubelet dials a pod's IP itself for HTTP, TCP and gRPC
// probes and httpGet hooks, so a simulated pod must really answer there.
// Inside podtrace's pod network namespace (engine/podnet, Linux) the
// node's pod CIDR is made local and each pod answers on its own pod IP,
// which the EndpointSlice API accepts. Elsewhere each pod gets a loopback
// address that mirrors its place in the pod CIDR (10.244.1.7 is served as
// 127.244.1.7): that needs no namespace, but EndpointSlices refuse
// loopback addresses (Services get no endpoints), ports below 1024 need
// root, and on macOS only 127.0.0.1 is configured (`sudo ifconfig lo0
// alias 127.244.1.7` adds one), so there probes of pods whose address
// cannot be bound fail with connection refused. A bind that fails is
// logged, not fatal.
package sim

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/cri/sim/ipam"
	"github.com/podtrace/podtrace/engine/cri/sim/model"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/version"
)

// RuntimeName is the name the runtime reports (engine/cri's
// SimulatedRuntimeName).
const RuntimeName = cri.SimulatedRuntimeName

// Config configures one node's simulated runtime.
type Config struct {
	// Node names the node (IDs depend on it and on Seed).
	Node string
	// PodCIDR is the node's pod range, e.g. 10.244.1.0/24.
	PodCIDR string
	// Seed makes latencies and IDs repeatable.
	Seed int64
	// Speed, when set, divides every latency of the model as it is waited
	// (2 = twice as fast); nil means 1.
	Speed func() float64
	// Latency is the timing model; model.DefaultLatency when nil.
	Latency *model.Latency
	// Clock drives every wait of the model and of the containers'
	// programs, and stamps their state changes; the real clock when nil.
	Clock clock.WithTicker
	// Network, when set, wraps each sandbox's CNI ADD (the cni stage): it
	// must call add, or return an error instead, which fails the sandbox as
	// a failing CNI plugin does.
	Network func(ctx context.Context, md *runtimeapi.PodSandboxMetadata, sandboxID string, add func() (ip string, err error)) (string, error)
	// ExtraPorts, when set, names ports to answer on besides the pod's
	// container ports (the ports its probes and hooks use).
	ExtraPorts func(md *runtimeapi.PodSandboxMetadata) []int32
	// Unhealthy, when set and true for a pod, makes it answer HTTP with 503
	// and refuse TCP, as an application that is not ready does.
	Unhealthy func(md *runtimeapi.PodSandboxMetadata) bool
	// Mounts, when set, names the file system the kubelet mounted at or
	// above a host path (cri.Config's Mounts): a container's volume there
	// is of that type (agnhost mounttest's fs_type reads "tmpfs" for an
	// emptyDir of medium Memory).
	Mounts func(hostPath string) string
	// StateFile, when set, is where the runtime keeps the records of its
	// sandboxes and containers across restarts, as containerd keeps its
	// metadata (see Save).
	StateFile string
	// HostDir, when set, is the node's host file system under podtrace's
	// data dir (cri.Config's HostDir): a container's bind mount whose
	// source below it is missing gets it made as a directory, as
	// containerd makes it; nothing is made elsewhere.
	HostDir string
	// Dir, when set, is where the runtime keeps each sandbox's files (its
	// resolv.conf), as containerd keeps them in its state directory;
	// without one, containers get no /etc/resolv.conf.
	Dir string
	// TracerProvider, when set, records the CRI calls that start a pod
	// (RunPodSandbox, PullImage, CreateContainer, StartContainer) as
	// containerd 2.x does: server spans in the kubelet's trace (see
	// TracerProvider).
	TracerProvider oteltrace.TracerProvider
}

// Runtime is one node's simulated CRI runtime.
type Runtime struct {
	cfg    Config
	timing model.Timing
	ipam   *ipam.Plugin
	// podIPs: pods answer on their own pod IPs (engine/podnet).
	podIPs bool
	tracer oteltrace.Tracer // nil: no spans

	mu         sync.Mutex
	sandboxes  map[string]*sandbox
	containers map[string]*container
	images     map[string]*runtimeapi.Image // by normalized reference, its one tag
	// changes counts the changes to what Save writes: sandboxes,
	// containers and their states and resources, images.
	changes uint64

	saveMu sync.Mutex
	saved  []byte // the state last written to StateFile
	// savedChanges is changes when saved was taken: Save skips an
	// unchanged state.
	savedChanges uint64
	closed       atomic.Bool // Shutdown: nothing more is written

	streamOnce     sync.Once
	stream         streaming.Server // exec, attach and port-forward streams
	streamListener net.Listener
	streamErr      error
}

type sandbox struct {
	id      string
	config  *runtimeapi.PodSandboxConfig
	created time.Time
	ip      string
	ready   bool
	serving *server
}

type container struct {
	id, sandbox string
	// status is the container's CRI record, guarded by the runtime's mu:
	// its state, times and exit, and its CPU and memory settings (from its
	// configuration, then UpdateContainerResources), as containerd
	// reports the ones it applied.
	status *runtimeapi.ContainerStatus
	log    *logFile
	// proc is its process; nil for a container loaded from the state of
	// an earlier run: it exited with the node (see StateFile).
	proc *process
}

var (
	_ internalapi.RuntimeService      = (*Runtime)(nil)
	_ internalapi.ImageManagerService = (*Runtime)(nil)
)

// New returns the simulated runtime of one node.
func New(cfg Config) (*Runtime, error) {
	lat := model.DefaultLatency
	if cfg.Latency != nil {
		lat = *cfg.Latency
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = "10.244.0.0/24"
	}
	ipam, err := ipam.New(cfg.PodCIDR)
	if err != nil {
		return nil, err
	}
	podIPs := podnet.Inside()
	if podIPs {
		if err := podnet.AddRange(cfg.PodCIDR); err != nil {
			return nil, err
		}
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := &Runtime{cfg: cfg, timing: model.Timing{Latency: lat, Clock: clk, Seed: cfg.Seed, Speed: cfg.Speed}, ipam: ipam, podIPs: podIPs,
		sandboxes: map[string]*sandbox{}, containers: map[string]*container{}, images: map[string]*runtimeapi.Image{}}
	if cfg.TracerProvider != nil {
		r.tracer = cfg.TracerProvider.Tracer("github.com/podtrace/podtrace/engine/cri/sim")
	}
	if err := r.restore(); err != nil {
		return nil, err
	}
	return r, nil
}

// RangeSet returns the node's IPAM range as host-local prints it
// ("10.244.1.1-10.244.1.254"), for the cni fault's error.
func (r *Runtime) RangeSet() string { return r.ipam.RangeSet() }

// Version implements CRI. The runtime's version is podtrace's, as a
// semantic version, which is what the kubelet reads (an unversioned
// build's "dev" would be "Unknown" in the Node's containerRuntimeVersion).
func (r *Runtime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: RuntimeName, RuntimeVersion: runtimeVersion(),
		RuntimeApiVersion: "v1"}, nil
}

// runtimeVersion is version.Podtrace without its "v", or 0.0.0-dev when
// that is not a semantic version.
func runtimeVersion() string {
	if v, err := utilversion.ParseSemantic(version.Podtrace); err == nil {
		return v.String()
	}
	return "0.0.0-dev"
}

// Status reports the runtime and its network ready.
func (r *Runtime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true}}}}, nil
}

// RuntimeConfig reports the cgroup driver, as containerd does.
func (r *Runtime) RuntimeConfig(context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_SYSTEMD}}, nil
}

// UpdateRuntimeConfig accepts the pod CIDR the kubelet passes on.
func (r *Runtime) UpdateRuntimeConfig(context.Context, *runtimeapi.RuntimeConfig) error { return nil }

// Close implements CRI; the runtime lives as long as the process.
func (r *Runtime) Close(context.Context) error { return nil }

// criError turns the errors that are not yet CRI's gRPC statuses (a
// pull's, worded as containerd words them, a program's, a context's)
// into statuses.
func criError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "rpc error: code = NotFound desc = "); ok {
		return status.Error(codes.NotFound, rest)
	}
	return status.Error(codes.Unknown, strings.TrimPrefix(msg, "rpc error: code = Unknown desc = "))
}

// address is where a pod with IPAM address ip is served: ip itself in a
// pod network namespace, else its loopback twin (10.244.1.7 →
// 127.244.1.7).
func (r *Runtime) address(ip string) string {
	if r.podIPs {
		return ip
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return ip
	}
	b := a.As4()
	b[0] = 127
	return netip.AddrFrom4(b).String()
}

// errShutDown answers the calls that would write under the data dir after
// Shutdown.
var errShutDown = status.Error(codes.Unavailable, RuntimeName+" is shut down")

func notFound(kind, id string) error {
	return status.Errorf(codes.NotFound, "an error occurred when try to find %s %q: not found", kind, id)
}

func podKey(md *runtimeapi.PodSandboxMetadata) string {
	return fmt.Sprintf("%s/%s", md.GetNamespace(), md.GetName())
}
