package sim

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	oteltrace "go.opentelemetry.io/otel/trace"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ServiceName is the service.name of the simulated runtime's spans, as
// "containerd" is containerd's.
const ServiceName = "podtrace-sim-cri"

// The CRI services, as their gRPC methods are named
// (runtime.v1.RuntimeService/RunPodSandbox).
const (
	runtimeService = "runtime.v1.RuntimeService"
	imageService   = "runtime.v1.ImageService"
)

// serverSpan starts the span of a CRI call as containerd 2.x records it
// (otelgrpc's server span, named service/method), a child of the span in
// the kubelet's ctx, so that it nests in the kubelet's syncPod. end ends it
// with the call's error. Without a tracer provider it does nothing.
func (r *Runtime) serverSpan(ctx context.Context, service, method string) (_ context.Context, end func(error)) {
	if r.tracer == nil {
		return ctx, func(error) {}
	}
	name := service + "/" + method
	ctx, span := r.tracer.Start(ctx, name, oteltrace.WithSpanKind(oteltrace.SpanKindServer),
		oteltrace.WithAttributes(semconv.RPCSystemNameGRPC, semconv.RPCMethod(name)))
	return ctx, func(err error) {
		s := status.Convert(err)
		if serverError(s.Code()) {
			span.SetStatus(codes.Error, s.Message())
		}
		span.SetAttributes(semconv.RPCResponseStatusCode(codeName(s.Code())))
		span.End()
	}
}

// serverError reports whether otelgrpc marks a server span with code as an
// error: the server's faults, not the client's.
func serverError(c grpccodes.Code) bool {
	switch c {
	case grpccodes.Unknown, grpccodes.DeadlineExceeded, grpccodes.Unimplemented, grpccodes.Internal,
		grpccodes.Unavailable, grpccodes.DataLoss:
		return true
	}
	return false
}

// codeName is a gRPC status code as OpenTelemetry's rpc.response.status_code
// spells it (OK, NOT_FOUND, DEADLINE_EXCEEDED).
func codeName(c grpccodes.Code) string {
	if c == grpccodes.Canceled {
		return "CANCELLED"
	}
	var b []byte
	for i, ch := range c.String() {
		if ch >= 'A' && ch <= 'Z' && i > 0 && c != grpccodes.OK {
			b = append(b, '_')
		}
		if ch >= 'a' && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		b = append(b, byte(ch))
	}
	return string(b)
}
