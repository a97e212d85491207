package node

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	oteltrace "go.opentelemetry.io/otel/trace"
	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/component-base/tracing"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/kubernetes/pkg/kubelet/server"
)

// tracerProvider is the kubelet's tracer provider: cfg's, else one made
// from its tracing block.
func tracerProvider(ctx context.Context, cfg Config) (oteltrace.TracerProvider, error) {
	if cfg.TracerProvider != nil {
		return cfg.TracerProvider, nil
	}
	return TracerProvider(ctx, cfg.Spec.Name, cfg.Tracing)
}

// TracerProvider is a kubelet's tracer provider as cmd/kubelet/app's
// newTracerProvider makes it from the tracing block tc (service.name
// kubelet, host.name the node's name), or a no-op one without a block. The
// provider sends what it holds when ctx ends.
func TracerProvider(ctx context.Context, node string, tc *tracingapi.TracingConfiguration) (oteltrace.TracerProvider, error) {
	if tc == nil {
		return noopoteltrace.NewTracerProvider(), nil
	}
	return NewTracerProvider(ctx, server.ComponentKubelet, node, tc)
}

// NewTracerProvider is a tracer provider for a node's component named
// service (service.name), made from the tracing block tc as the kubelet's
// is (host.name the node's name). The provider sends what it holds when
// ctx ends.
func NewTracerProvider(ctx context.Context, service, node string, tc *tracingapi.TracingConfiguration) (oteltrace.TracerProvider, error) {
	tp, err := tracing.NewProvider(ctx, tc, nil, []resource.Option{resource.WithAttributes(
		semconv.ServiceName(service), semconv.HostName(node))})
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(stop)
	})
	return tp, nil
}
