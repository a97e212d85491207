package node

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	oteltrace "go.opentelemetry.io/otel/trace"
	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/component-base/tracing"
	"k8s.io/kubernetes/pkg/kubelet/server"
)

// tracerProvider is the kubelet's tracer provider as cmd/kubelet/app's
// newTracerProvider makes it from the configuration's tracing block
// (service.name kubelet, host.name the node's name), or a no-op one
// without a block. The provider sends what it holds when ctx ends.
func tracerProvider(ctx context.Context, cfg Config) (oteltrace.TracerProvider, error) {
	if cfg.Tracing == nil {
		return noopoteltrace.NewTracerProvider(), nil
	}
	tp, err := tracing.NewProvider(ctx, cfg.Tracing, nil, []resource.Option{resource.WithAttributes(
		semconv.ServiceName(server.ComponentKubelet), semconv.HostName(cfg.Spec.Name))})
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
