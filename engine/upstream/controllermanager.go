package upstream

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"

	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// ControllerManagerConfig is what kube-controller-manager is started with.
type ControllerManagerConfig struct {
	// Kubeconfig is system:kube-controller-manager's kubeconfig.
	Kubeconfig string
	// ServiceAccountKeyFile signs the service account tokens each controller
	// uses (--use-service-account-credentials).
	ServiceAccountKeyFile string
	// RootCAFile is published to every namespace as kube-root-ca.crt.
	RootCAFile string
	// ClusterSigningCertFile and ClusterSigningKeyFile sign approved CSRs.
	ClusterSigningCertFile, ClusterSigningKeyFile string
	// Controllers is --controllers; "*" when empty.
	Controllers string
	// QPS and Burst are the controllers' client limits (0: 2000 and 4000).
	QPS, Burst int
	// ExtraArgs are more kube-controller-manager flags, applied last.
	ExtraArgs []string
}

// StartControllerManager runs kube-controller-manager in this process, as
// cmd/kube-controller-manager/app/testing.StartTestServer builds it, until
// ctx ends. Each controller writes as its own service account. The returned
// channel is closed once it has stopped: only then can another controller
// manager start in this process (its shared informers' name is
// process-wide until they shut down).
func StartControllerManager(ctx context.Context, cfg ControllerManagerConfig) (<-chan struct{}, error) {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("start kube-controller-manager: %w", err)
	}
	all, disabled, aliases := kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	if cfg.Controllers == "" {
		cfg.Controllers = "*"
	}
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 2000, 4000
	}
	args := []string{
		"--kubeconfig=" + cfg.Kubeconfig,
		"--authentication-kubeconfig=" + cfg.Kubeconfig,
		"--authorization-kubeconfig=" + cfg.Kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + cfg.ServiceAccountKeyFile,
		"--root-ca-file=" + cfg.RootCAFile,
		"--controllers=" + cfg.Controllers,
		"--kube-api-qps=" + strconv.Itoa(cfg.QPS),
		"--kube-api-burst=" + strconv.Itoa(cfg.Burst),
		"--concurrent-replicaset-syncs=10",
		"--concurrent-deployment-syncs=10",
		// The node lifecycle controller looks at nodes every second rather
		// than every 5 (the flag's default): a new node loses its
		// node.kubernetes.io/not-ready taint about a second after it
		// reports Ready, and a node that stops does the same.
		"--node-monitor-period=1s",
	}
	if cfg.ClusterSigningCertFile != "" {
		args = append(args, "--cluster-signing-cert-file="+cfg.ClusterSigningCertFile,
			"--cluster-signing-key-file="+cfg.ClusterSigningKeyFile)
	}
	args = append(args, cfg.ExtraArgs...)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("start kube-controller-manager: %w", err)
	}
	s.ParsedFlags = &named
	c, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		return nil, fmt.Errorf("start kube-controller-manager: %w", err)
	}
	// Run registers the configuration with configz, which refuses a second
	// registration: let a controller manager started again in this process
	// (a restart on the same data dir, tests) run.
	configz.Delete(kcmapp.ConfigzName)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := kcmapp.Run(ctx, c.Complete()); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "kube-controller-manager stopped")
		}
	}()
	return done, nil
}
