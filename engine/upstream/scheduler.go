package upstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"

	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/podtrace/podtrace/engine/hooks/sched"
)

// Client limits the scheduler gets when SchedulerConfig leaves them unset:
// upstream's defaults (50 QPS, burst 100) are what make a simulated cluster
// slow to schedule.
const (
	DefaultSchedulerQPS   = 1000
	DefaultSchedulerBurst = 2000
)

// schedulerConfigzName is the name kube-scheduler registers its configuration
// under in component-base's configz, once per process.
const schedulerConfigzName = "componentconfig"

// SchedulerConfig is what kube-scheduler is started with.
type SchedulerConfig struct {
	// Kubeconfig is the scheduler's identity (system:kube-scheduler) and
	// the API server it talks to.
	Kubeconfig string
	// Dir is where the KubeSchedulerConfiguration file is written.
	Dir string
	// Hooks are podtrace's seams (the PodTrace plugin and the framework
	// wrapper); nil runs plain kube-scheduler.
	Hooks *sched.Hooks
	// QPS and Burst are the scheduler's client limits; zero means
	// DefaultSchedulerQPS and DefaultSchedulerBurst.
	QPS   float32
	Burst int32
}

// StartScheduler builds kube-scheduler as its command does (app.Setup with
// the out-of-tree plugin registered), installs the hooks' framework wrapper
// and runs it (app.Run) until ctx ends. Leader election is off and nothing is
// served (no --secure-port); the scheduler logs through klog wherever the
// process has configured it. It returns once the scheduler is built; a
// failure to run later is logged.
func StartScheduler(ctx context.Context, cfg SchedulerConfig) error {
	if cfg.Kubeconfig == "" || cfg.Dir == "" {
		return errors.New("start kube-scheduler: a kubeconfig and a directory are needed")
	}
	if cfg.QPS == 0 {
		cfg.QPS = DefaultSchedulerQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultSchedulerBurst
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("start kube-scheduler: %w", err)
	}
	path := filepath.Join(cfg.Dir, "kube-scheduler.yaml")
	if err := os.WriteFile(path, []byte(schedulerConfiguration(cfg)), 0o644); err != nil {
		return fmt.Errorf("start kube-scheduler: %w", err)
	}

	opts := options.NewOptions()
	opts.ConfigFile = path
	opts.SecureServing.BindPort = 0 // --secure-port=0: no healthz or metrics server
	opts.LeaderElection.LeaderElect = false
	var extra []app.Option
	if cfg.Hooks != nil {
		extra = append(extra, cfg.Hooks.Option())
	}
	cc, s, err := app.Setup(ctx, opts, extra...)
	if err != nil {
		return fmt.Errorf("start kube-scheduler: %w", err)
	}
	if cfg.Hooks != nil {
		cfg.Hooks.Wrap(s)
	}
	// app.Run registers the configuration with configz, which refuses a
	// second registration: let a scheduler started again in this process run.
	configz.Delete(schedulerConfigzName)
	go func() {
		if err := app.Run(ctx, cc, s); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "kube-scheduler stopped")
		}
	}()
	return nil
}

// schedulerConfiguration renders the KubeSchedulerConfiguration: one profile,
// default-scheduler, with the PodTrace plugin enabled at multiPoint (every
// extension point it implements) when there are hooks.
func schedulerConfiguration(cfg SchedulerConfig) string {
	s := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: ` + strconv.Quote(cfg.Kubeconfig) + `
  qps: ` + strconv.FormatFloat(float64(cfg.QPS), 'g', -1, 32) + `
  burst: ` + strconv.Itoa(int(cfg.Burst)) + `
leaderElection:
  leaderElect: false
profiles:
- schedulerName: ` + sched.Component + "\n"
	if cfg.Hooks != nil {
		s += `  plugins:
    multiPoint:
      enabled:
      - name: ` + sched.PluginName + "\n"
	}
	return s
}
