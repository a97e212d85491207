package controllerutil

import (
	"errors"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/trace"
)

// DefaultWorkers is the number of objects a workload controller syncs at
// once when its Config says none.
const DefaultWorkers = 5

// Config configures a workload controller (deployment.Config and
// replicaset.Config are this type).
type Config struct {
	// Client talks to the API server as the controller (its service account).
	Client kubernetes.Interface
	// Clock drives requeues, expectations, conditions, deadlines and
	// timestamps; real time when nil.
	Clock clock.WithTicker
	// Tracer receives reconcile stage events and gates the controller's
	// writes (pod creation, ReplicaSet writes); may be nil.
	Tracer *trace.Tracer
	// Workers is the number of objects synced at once; DefaultWorkers when zero.
	Workers int
	// User names the controller in injected forbidden errors; the
	// controller's own identity when empty.
	User string
	// RateLimiter paces retries of a failing object; client-go's default
	// controller rate limiter (5ms doubling to 1000s) when nil.
	RateLimiter workqueue.TypedRateLimiter[string]
	// Informers are shared with the other controllers, as in
	// kube-controller-manager (which watches with its own identity while each
	// controller writes with its own); nil makes the controller its own from Client.
	Informers informers.SharedInformerFactory
}

// InformerFactory returns the shared informers, or new ones watching with Client.
func (cfg Config) InformerFactory() informers.SharedInformerFactory {
	if cfg.Informers != nil {
		return cfg.Informers
	}
	return informers.NewSharedInformerFactory(cfg.Client, 0)
}

// WithDefaults returns cfg with the real clock, DefaultWorkers workers and
// user defaultUser where cfg leaves them out (the rate limiter is NewQueue's
// to default), or an error when it has no client.
func (cfg Config) WithDefaults(defaultUser string) (Config, error) {
	if cfg.Client == nil {
		return cfg, errors.New("no client")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.User == "" {
		cfg.User = defaultUser
	}
	return cfg, nil
}

// NewQueue returns the controller's work queue, called name, reporting
// retries for component.
func (cfg Config) NewQueue(name, component string) *Queue {
	return NewQueue(QueueConfig{Name: name, Component: component, Clock: cfg.Clock, Tracer: cfg.Tracer, RateLimiter: cfg.RateLimiter})
}
