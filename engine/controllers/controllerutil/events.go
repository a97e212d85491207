package controllerutil

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// NewRecorder returns an event recorder that writes core/v1 Events through
// client with source component, and stops when ctx is done. It never logs
// events to the terminal. The correlator (deduplication, counts) runs on clk.
func NewRecorder(ctx context.Context, client kubernetes.Interface, component string, clk clock.PassiveClock) record.EventRecorder {
	b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{Clock: clk}))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	go func() {
		<-ctx.Done()
		b.Shutdown()
	}()
	return b.NewRecorder(scheme.Scheme, v1.EventSource{Component: component})
}
