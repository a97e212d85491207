package upstream

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/apis/apiserver"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
)

// TestAPIServerTracingConfig reads the written file back with
// kube-apiserver's own decoder, as --tracing-config-file does.
func TestAPIServerTracingConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := WriteAPIServerTracingConfig(path, Tracing("127.0.0.1:4317")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	apiserverinstall.Install(scheme)
	obj, gvk, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder().Decode(b, nil, nil)
	if err != nil {
		t.Fatalf("kube-apiserver would refuse the file: %v\n%s", err, b)
	}
	tc, ok := obj.(*apiserver.TracingConfiguration)
	if !ok || gvk.GroupVersion().String() != "apiserver.config.k8s.io/v1" {
		t.Fatalf("decoded %T (%v), want apiserver.config.k8s.io/v1 TracingConfiguration", obj, gvk)
	}
	if tc.Endpoint == nil || *tc.Endpoint != "127.0.0.1:4317" || tc.SamplingRatePerMillion == nil || *tc.SamplingRatePerMillion != 1000000 {
		t.Errorf("decoded %+v, want endpoint 127.0.0.1:4317 and 1000000 per million", tc.TracingConfiguration)
	}
}

func TestTracingFromEnv(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if tc, err := TracingFromEnv(); tc != nil || err != nil {
		t.Errorf("no endpoint: got %v, %v; want no tracing", tc, err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
	if tc, err := TracingFromEnv(); err != nil || tc == nil || *tc.Endpoint != "127.0.0.1:4317" {
		t.Errorf("endpoint http://127.0.0.1:4317: got %v, %v; want host:port 127.0.0.1:4317", tc, err)
	}
}
