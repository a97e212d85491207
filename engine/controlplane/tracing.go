package controlplane

import (
	"path/filepath"

	"github.com/podtrace/podtrace/engine/upstream"
)

// tracingArgs adds kube-apiserver's --tracing-config-file to args when the
// OpenTelemetry environment names an OTLP endpoint (see docs/tracing.md):
// the API server then sends its own spans (authentication, authorization,
// admission, the etcd write) there, every request sampled.
func (cp *ControlPlane) tracingArgs(args []string) ([]string, error) {
	tc, err := upstream.TracingFromEnv()
	if err != nil || tc == nil {
		return args, err
	}
	path := filepath.Join(cp.DataDir, "apiserver-tracing.yaml")
	if err := upstream.WriteAPIServerTracingConfig(path, tc); err != nil {
		return nil, err
	}
	return append(args, "--tracing-config-file="+path), nil
}
