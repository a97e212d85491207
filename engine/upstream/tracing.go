package upstream

import (
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"sigs.k8s.io/yaml"

	"github.com/podtrace/podtrace/export/otlp"
)

// SampleEveryRequest is the sampling rate, per million, the components'
// tracing is given: anything less leaves pods with partial lifecycles.
const SampleEveryRequest int32 = 1_000_000

// Tracing is the components' tracing configuration (kube-apiserver's
// TracingConfiguration file, the kubelet's tracing block) sending every
// span to the OTLP/gRPC endpoint host:port.
func Tracing(endpoint string) *tracingapi.TracingConfiguration {
	rate := SampleEveryRequest
	return &tracingapi.TracingConfiguration{Endpoint: &endpoint, SamplingRatePerMillion: &rate}
}

// TracingFromEnv is the components' tracing configuration for the OTLP
// endpoint the OpenTelemetry environment names (see export/otlp), nil when
// it names none: then the components trace nothing, as upstream's do by
// default.
func TracingFromEnv() (*tracingapi.TracingConfiguration, error) {
	s, err := otlp.FromEnv(nil)
	if err != nil || !s.Enabled() {
		return nil, err
	}
	return Tracing(s.HostPort()), nil
}

// APIServerTracingConfig is tc as kube-apiserver's --tracing-config-file
// reads it: an apiserver.config.k8s.io/v1 TracingConfiguration, in YAML.
func APIServerTracingConfig(tc *tracingapi.TracingConfiguration) ([]byte, error) {
	doc := apiserverv1.TracingConfiguration{
		TypeMeta:             metav1.TypeMeta{APIVersion: apiserverv1.SchemeGroupVersion.String(), Kind: "TracingConfiguration"},
		TracingConfiguration: *tc,
	}
	return yaml.Marshal(doc)
}

// WriteAPIServerTracingConfig writes tc to path for --tracing-config-file.
func WriteAPIServerTracingConfig(path string, tc *tracingapi.TracingConfiguration) error {
	b, err := APIServerTracingConfig(tc)
	if err != nil {
		return fmt.Errorf("tracing config: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("tracing config: %w", err)
	}
	return nil
}
