// Package otlp sends podtrace's stage events as OpenTelemetry traces over
// OTLP/gRPC, when the standard OpenTelemetry environment asks for it: one
// trace per object (its trace ID is the pod's UID), a root span for the
// object and a child span per stage and attempt, with OpenTelemetry's
// Kubernetes attributes. It reads stage events only; nothing listens or
// sends unless OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT names an endpoint.
package otlp

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// The environment variables podtrace reads itself; the OTLP exporter and the
// SDK read the rest (headers, timeout, TLS, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_SERVICE_NAME, OTEL_BSP_*, OTEL_TRACES_SAMPLER).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
)

// ServiceName is the service.name podtrace's spans carry unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says otherwise.
const ServiceName = "podtrace"

// Settings is what the environment asks of trace export.
type Settings struct {
	// Endpoint is the OTLP endpoint as the user gave it (a URL or host:port);
	// empty means export is off.
	Endpoint string
}

// Enabled reports whether the environment asks for trace export.
func (s Settings) Enabled() bool { return s.Endpoint != "" }

// HostPort is the endpoint as host:port, the form kube-apiserver's and the
// kubelet's TracingConfiguration take.
func (s Settings) HostPort() string {
	ep := s.Endpoint
	for _, scheme := range []string{"http://", "https://"} {
		ep = strings.TrimPrefix(ep, scheme)
	}
	ep, _, _ = strings.Cut(ep, "/")
	return ep
}

// FromEnv reads the standard OpenTelemetry environment through getenv
// (os.Getenv when nil). Only OTLP over gRPC is spoken: an unset protocol
// means grpc; another protocol is an error, as is an exporter other than
// otlp or none.
func FromEnv(getenv func(string) string) (Settings, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return Settings{}, nil
	}
	switch exp := strings.TrimSpace(getenv(EnvTracesExporter)); exp {
	case "", "otlp":
	case "none":
		return Settings{}, nil
	default:
		return Settings{}, fmt.Errorf("%s=%s: podtrace exports traces with otlp only (or none)", EnvTracesExporter, exp)
	}
	ep := strings.TrimSpace(getenv(EnvTracesEndpoint))
	if ep == "" {
		ep = strings.TrimSpace(getenv(EnvEndpoint))
	}
	if ep == "" {
		return Settings{}, nil
	}
	for _, name := range []string{EnvTracesProtocol, EnvProtocol} {
		if p := strings.TrimSpace(getenv(name)); p != "" {
			if p != "grpc" {
				return Settings{}, fmt.Errorf("%s=%s: podtrace exports OTLP over gRPC only: set %s=grpc and a gRPC endpoint (port 4317)", name, p, EnvProtocol)
			}
			break
		}
	}
	return Settings{Endpoint: ep}, nil
}

// Start returns an Exporter sending to the endpoint the environment names
// (the OTLP exporter reads the OTEL_EXPORTER_OTLP_* variables itself), or
// nil when the environment does not ask for export. serviceVersion is
// podtrace's version, for service.version.
func Start(ctx context.Context, serviceVersion string) (*Exporter, error) {
	s, err := FromEnv(nil)
	if err != nil || !s.Enabled() {
		return nil, err
	}
	exp, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter for %s: %w", s.Endpoint, err)
	}
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName(ServiceName), semconv.ServiceVersion(serviceVersion)),
		envResource(ctx))
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(idGenerator{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	return newExporter(tp, s.Endpoint), nil
}

// envResource is the resource OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME
// describe, with the SDK's own attributes. A malformed variable gives what
// could be parsed.
func envResource(ctx context.Context) *resource.Resource {
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if res == nil {
		return resource.Empty()
	}
	_ = err // partial: keep the attributes that parsed
	return res
}
