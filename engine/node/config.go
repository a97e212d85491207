package node

import (
	"math"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeletoptions "k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

// ClusterDomain is the cluster's DNS domain (the kubelets' clusterDomain).
const ClusterDomain = "cluster.local"

// kubeletServer returns the kubelet's flags and configuration for one node,
// as kubemark's GetHollowKubeletConfig builds them (pkg/kubemark), with
// podtrace's differences: the server listens on addr and port
// (listenAddress), the node keeps its labels, taints and pod capacity, and
// nothing reads host cgroups.
func kubeletServer(cfg Config, addr string, port int) (*kubeletoptions.KubeletServer, error) {
	f := kubeletoptions.NewKubeletFlags()
	f.RootDirectory = cfg.Dir
	f.HostnameOverride = cfg.Spec.Name
	f.MinimumGCAge = metav1.Duration{Duration: time.Minute}
	if cfg.RealContainers {
		f.MinimumGCAge = metav1.Duration{} // upstream's default
	}
	f.MaxContainerCount = 100
	f.MaxPerPodContainerCount = 2
	f.NodeLabels = cfg.Spec.Labels
	if cfg.NodeIP != nil {
		f.NodeIP = cfg.NodeIP.String()
	}

	c, err := kubeletoptions.NewKubeletConfiguration()
	if err != nil {
		return nil, err
	}
	c.StaticPodURL = ""
	c.StaticPodPath = filepath.Join(cfg.Dir, "manifests")
	c.EnableServer = true
	c.Address = addr
	c.Port = int32(port)
	c.ReadOnlyPort = 0
	c.HealthzPort = 0
	c.FileCheckFrequency.Duration = 20 * time.Second
	c.HTTPCheckFrequency.Duration = 20 * time.Second
	// The kubelet looks at its node's conditions every 2 s (upstream's
	// default is 10 s) and writes only what changed, so a node whose
	// runtime network goes down turns NotReady within seconds.
	c.NodeStatusUpdateFrequency.Duration = 2 * time.Second
	c.NodeStatusReportFrequency.Duration = 5 * time.Minute
	// SyncFrequency stays upstream's 1 min (kubemark sets 10 s): every
	// running pod's periodic sync (volumes, secrets, status) six times
	// less often. Back-offs do not wait on it: a failed sync is retried
	// after 10 s, or when its crash-loop or image back-off ends.
	c.EvictionPressureTransitionPeriod.Duration = 5 * time.Minute
	// The simulated machine has no real memory or disk pressure to evict on.
	c.EvictionHard = map[string]string{}
	if cfg.MaxContainerRestartPeriod > 0 {
		// Upstream's own cap on crash-loop back-offs (KubeletCrashLoopBackOffMax,
		// beta and on by default since 1.35): the initial 10 s is capped too.
		c.CrashLoopBackOff.MaxContainerRestartPeriod = &metav1.Duration{Duration: cfg.MaxContainerRestartPeriod}
	}
	c.MaxPods = int32(cfg.Spec.Capacity.Pods().Value())
	if c.MaxPods == 0 {
		c.MaxPods = 110
	}
	c.ClusterDNS = append([]string{}, cfg.ClusterDNS...)
	c.ClusterDomain = ClusterDomain
	c.ImageGCHighThresholdPercent = 90
	c.ImageGCLowThresholdPercent = 80
	c.ProviderID = "podtrace://" + cfg.Spec.Name
	c.VolumeStatsAggPeriod.Duration = time.Minute
	c.CgroupRoot = ""
	c.CPUCFSQuota = true
	c.EnableControllerAttachDetach = false
	c.EnableDebuggingHandlers = true
	c.CgroupsPerQOS = false
	c.EnforceNodeAllocatable = nil
	c.HairpinMode = kubeletconfig.HairpinVeth
	c.MaxOpenFiles = openFilesLimit()
	c.RegistryBurst = 10
	c.RegistryPullQPS = 5.0
	c.ResolverConfig = kubetypes.ResolvConfDefault
	c.KubeletCgroups = ""
	c.SystemCgroups = ""
	c.SerializeImagePulls = true
	c.ProtectKernelDefaults = false
	c.RegisterWithTaints = cfg.Spec.Taints
	c.RegisterNode = true
	c.LocalStorageCapacityIsolation = true
	c.PodLogsDir = filepath.Join(cfg.Dir, "pod-logs")
	c.FailSwapOn = false
	// The KUBE-IPTABLES-HINT and canary chains are for kube-proxy and the
	// like on a real node; podtrace's kubelets leave the firewall of the
	// machine (or of the pod network namespace) alone.
	c.MakeIPTablesUtilChains = false
	return &kubeletoptions.KubeletServer{KubeletFlags: *f, KubeletConfiguration: *c}, nil
}

// openFilesLimit is the process's hard limit on open files. The kubelet
// sets RLIMIT_NOFILE to its maxOpenFiles for the whole process (kubemark's
// 1024 would choke podtrace and every other kubelet in it); at the hard
// limit the call changes nothing the Go runtime has not already raised.
func openFilesLimit() int64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Max > math.MaxInt64 {
		return 1000000 // upstream's default
	}
	return int64(rl.Max)
}
