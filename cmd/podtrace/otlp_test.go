package main

import (
	"bytes"
	"context"
	"github.com/podtrace/podtrace/source/stream"
	"strings"
	"testing"
)

// attach --print-tracing-config needs no cluster: it prints the settings
// for --otlp-listen's address and exits 0.
func TestPrintTracingConfig(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"attach", "--print-tracing-config", "--otlp-listen", "10.1.2.3:4317",
		"--kubeconfig", "/nonexistent"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	for _, want := range []string{"kind: TracingConfiguration", "endpoint: 10.1.2.3:4317", "samplingRatePerMillion: 1000000",
		"tracing:\n", `OTEL_EXPORTER_OTLP_ENDPOINT=http://10.1.2.3:4317`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// An OTLP protocol podtrace does not speak is refused in one line before
// anything starts.
func TestExportRefusesHTTPProtocol(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	if _, err := stream.ExportEvents(nil); err == nil || !strings.Contains(err.Error(), "gRPC only") {
		t.Errorf("err = %v, want one saying podtrace exports over gRPC only", err)
	}
}
