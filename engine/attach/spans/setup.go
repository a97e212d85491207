package spans

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/podtrace/podtrace/engine/upstream"
)

// OperatorConfig is what an operator sets on a Kubernetes 1.36 cluster so
// that its components send their spans to the OTLP/gRPC endpoint
// (host:port, as the nodes and the control plane reach it), every request
// sampled (1,000,000 per million: anything less leaves pods with partial
// lifecycles): kube-apiserver's --tracing-config-file, the kubelet's
// tracing block, and containerd 2.x's environment.
func OperatorConfig(endpoint string) (string, error) {
	tc := upstream.Tracing(endpoint)
	api, err := upstream.APIServerTracingConfig(tc)
	if err != nil {
		return "", err
	}
	kubelet, err := yaml.Marshal(map[string]any{"tracing": tc})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# kube-apiserver: save as /etc/kubernetes/tracing-config.yaml and start it with\n")
	fmt.Fprintf(&b, "#   --tracing-config-file=/etc/kubernetes/tracing-config.yaml\n%s\n", api)
	fmt.Fprintf(&b, "# kubelet: add to its KubeletConfiguration (/var/lib/kubelet/config.yaml), then restart it\n%s\n", kubelet)
	fmt.Fprintf(&b, "# containerd 2.x (1.x sends nothing): a systemd drop-in,\n")
	fmt.Fprintf(&b, "#   /etc/systemd/system/containerd.service.d/otel.conf, then systemctl daemon-reload && systemctl restart containerd\n")
	fmt.Fprintf(&b, "[Service]\n")
	for _, kv := range ContainerdEnv(endpoint) {
		fmt.Fprintf(&b, "Environment=%q\n", kv)
	}
	return b.String(), nil
}

// ContainerdEnv is the OTEL_* environment that makes containerd 2.x send
// its CRI spans to endpoint over OTLP/gRPC in plain text, every request
// sampled (containerd's docs/tracing.md).
func ContainerdEnv(endpoint string) []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + endpoint,
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_EXPORTER_OTLP_INSECURE=true",
		"OTEL_SERVICE_NAME=containerd",
		"OTEL_TRACES_SAMPLER=traceidratio",
		"OTEL_TRACES_SAMPLER_ARG=1.0",
	}
}
