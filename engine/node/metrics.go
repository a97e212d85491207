package node

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"k8s.io/kubernetes/pkg/kubelet/metrics/collectors"
)

// Every kubelet registers the same two stable collectors into the
// process-global metrics registry when it starts running
// (Kubelet.initializeModules: the volume stats and log metrics
// collectors), and a second registration panics. Kubelets in one process
// therefore take turns for that instant only: registering holds the lock
// from RunKubelet until this kubelet's collectors are in the registry, then
// takes them out again (prometheus matches collectors by their
// descriptors), so the next kubelet can register its own. The rest of the
// start, registration with the API server included, runs concurrently.
var registering sync.Mutex

// sharedCollectors returns collectors with the descriptors of the ones every
// kubelet registers.
func sharedCollectors() []metrics.StableCollector {
	return []metrics.StableCollector{collectors.NewVolumeStatsCollector(nil), collectors.NewLogMetricsCollector(nil)}
}

// releaseCollectors waits until a starting kubelet has registered the
// shared collectors and unregisters them.
//
// It waits even when ctx ends meanwhile: the kubelet registers them anyway,
// and the next kubelet must not meet them.
func releaseCollectors() error {
	cs := sharedCollectors()
	for _, c := range cs {
		c.Create(nil, c)
	}
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	last := cs[len(cs)-1]
	for {
		// legacyregistry.CustomMustRegister registers them in its own
		// registry, then one by one in prometheus' default one: once the last
		// is in the default registry, all are in both.
		if prometheus.DefaultRegisterer.Unregister(last) {
			for _, c := range cs {
				legacyregistry.Registerer().Unregister(c)
				prometheus.DefaultRegisterer.Unregister(c)
			}
			return nil
		}
		select {
		case <-deadline.C:
			return fmt.Errorf("kubelet did not start its modules within a minute")
		case <-tick.C:
		}
	}
}
