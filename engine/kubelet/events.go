package kubelet

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// lruEntriesPerKubelet is client-go's default correlator cache size: a
// shared broadcaster gets this many entries per kubelet it serves, so
// repeated events are counted as one kubelet's own broadcaster would.
const lruEntriesPerKubelet = 4096

// EventHub records the core/v1 Events of kubelets running in one process
// through a few client-go broadcasters, each shared by up to perBroadcaster
// kubelets, instead of one broadcaster (two 1,000-event queues, goroutines,
// correlator) per kubelet. Every kubelet keeps its own identity: its
// recorder stamps source {kubelet, <node>}, the correlator keys on that
// source, and each event is written with that kubelet's own client
// (system:node:<node>).
type EventHub struct {
	ctx            context.Context
	clock          clock.PassiveClock
	perBroadcaster int

	mu   sync.Mutex
	last *eventShard // the broadcaster being filled
}

// eventShard is one broadcaster and the kubelets it serves.
type eventShard struct {
	b     record.EventBroadcaster
	sinks *hostSinks
	n     int
}

// NewEventHub returns a hub whose broadcasters stop when ctx is done; the
// correlators (deduplication, counts) run on clk.
func NewEventHub(ctx context.Context, clk clock.PassiveClock, perBroadcaster int) *EventHub {
	return &EventHub{ctx: ctx, clock: clk, perBroadcaster: max(perBroadcaster, 1)}
}

// Recorder returns the event recorder of the kubelet on node, writing
// through client.
func (h *EventHub) Recorder(node string, client kubernetes.Interface) record.EventRecorder {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil || h.last.n == h.perBroadcaster {
		sinks := &hostSinks{byHost: map[string]record.EventSink{}}
		b := record.NewBroadcaster(record.WithContext(h.ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{
			Clock: h.clock, LRUCacheSize: lruEntriesPerKubelet * h.perBroadcaster}))
		b.StartRecordingToSink(sinks)
		h.last = &eventShard{b: b, sinks: sinks}
	}
	h.last.n++
	h.last.sinks.add(node, &typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return h.last.b.NewRecorder(scheme.Scheme, v1.EventSource{Component: Component, Host: node})
}

// hostSinks writes each event through the sink of the kubelet named by its
// source host.
type hostSinks struct {
	mu     sync.RWMutex
	byHost map[string]record.EventSink
}

func (s *hostSinks) add(host string, sink record.EventSink) {
	s.mu.Lock()
	s.byHost[host] = sink
	s.mu.Unlock()
}

func (s *hostSinks) sink(e *v1.Event) (record.EventSink, error) {
	s.mu.RLock()
	sink := s.byHost[e.Source.Host]
	s.mu.RUnlock()
	if sink == nil { // a request that cannot be made: the broadcaster does not retry it
		return nil, &rest.RequestConstructionError{Err: fmt.Errorf("no kubelet client for event source host %q", e.Source.Host)}
	}
	return sink, nil
}

// Create implements record.EventSink.
func (s *hostSinks) Create(e *v1.Event) (*v1.Event, error) {
	sink, err := s.sink(e)
	if err != nil {
		return nil, err
	}
	return sink.Create(e)
}

// Update implements record.EventSink.
func (s *hostSinks) Update(e *v1.Event) (*v1.Event, error) {
	sink, err := s.sink(e)
	if err != nil {
		return nil, err
	}
	return sink.Update(e)
}

// Patch implements record.EventSink.
func (s *hostSinks) Patch(e *v1.Event, data []byte) (*v1.Event, error) {
	sink, err := s.sink(e)
	if err != nil {
		return nil, err
	}
	return sink.Patch(e, data)
}
