package sim

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
	grpccodes "google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri"
)

// With a tracer provider, the CRI calls that start a pod are server spans
// named as otelgrpc names containerd 2.x's, children of the span in the
// caller's context (the kubelet's syncPod); a failed call's span says so.
// Calls that start nothing (status, lists) record no span.
func TestCRICallsAreServerSpansInTheCallersTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r, err := New(Config{Node: "node-1", PodCIDR: "10.244.9.0/24", Seed: 1, Speed: func() float64 { return cri.MaxSpeed },
		TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tp.Tracer("kubelet").Start(context.Background(), "syncPod")
	defer r.Shutdown(context.Background()) //nolint:errcheck
	image := &runtimeapi.ImageSpec{Image: "nginx:1.27"}
	if _, err := r.PullImage(ctx, image, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "registry.invalid/nothing:1"}, nil, nil); err == nil {
		t.Fatal("pulling from an unknown registry succeeded")
	}
	sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u1"}, LogDirectory: t.TempDir()}
	sandbox, err := r.RunPodSandbox(ctx, sb, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.CreateContainer(ctx, sandbox, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "web"},
		Image: image, LogPath: "web/0.log"}, sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ListContainers(ctx, nil); err != nil {
		t.Fatal(err)
	}
	parent.End()

	want := []struct {
		name   string
		failed bool
	}{
		{"runtime.v1.ImageService/PullImage", false},
		{"runtime.v1.ImageService/PullImage", true},
		{"runtime.v1.RuntimeService/RunPodSandbox", false},
		{"runtime.v1.RuntimeService/CreateContainer", false},
		{"runtime.v1.RuntimeService/StartContainer", false},
	}
	got := rec.Ended()
	if len(got) != len(want)+1 {
		t.Fatalf("%d spans ended, want %d and the parent's", len(got), len(want))
	}
	for i, w := range want {
		s := got[i]
		if s.Name() != w.name || s.SpanKind() != oteltrace.SpanKindServer || s.Parent().SpanID() != parent.SpanContext().SpanID() ||
			s.SpanContext().TraceID() != parent.SpanContext().TraceID() || (s.Status().Code == codes.Error) != w.failed {
			t.Errorf("span %d: %s kind %s parent %s status %v, want %s, a server span of syncPod (%s), failed %v",
				i, s.Name(), s.SpanKind(), s.Parent().SpanID(), s.Status(), w.name, parent.SpanContext().SpanID(), w.failed)
		}
	}
}

// Without a tracer provider the runtime records nothing and costs nothing:
// no tracer is made.
func TestNoTracerProviderNoTracer(t *testing.T) {
	r, err := New(Config{Node: "node-1", PodCIDR: "10.244.9.0/24", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.tracer != nil {
		t.Error("a runtime without a tracer provider has a tracer")
	}
}

func TestCodeName(t *testing.T) {
	for c, want := range map[grpccodes.Code]string{0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND", 16: "UNAUTHENTICATED"} {
		if got := codeName(c); got != want {
			t.Errorf("codeName(%d) = %q, want %q", c, got, want)
		}
	}
}
