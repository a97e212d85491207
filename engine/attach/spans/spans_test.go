package spans

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/podtrace/podtrace/stages"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

func ms(f float64) time.Time { return t0.Add(time.Duration(f * float64(time.Millisecond))) }

// sp builds a span of trace tr, its times in milliseconds from t0.
func sp(tr, id, parent, name string, start, end float64, attrs ...string) Span {
	s := Span{Trace: tr, ID: id, Parent: parent, Name: name, Service: "apiserver", Start: ms(start), End: ms(end), Attrs: map[string]string{}}
	for i := 0; i+1 < len(attrs); i += 2 {
		s.Attrs[attrs[i]] = attrs[i+1]
	}
	return s
}

// createTrace is a pod create request's spans as kube-apiserver 1.36 sends
// them (shapes from a captured run), plus its authentication span, a trace
// of its own.
func createTrace() []Span {
	return []Span{
		sp("a0", "x1", "", "authentication", -0.01, 42),
		sp("t1", "r", "", createPodSpan, 0, 41.9, "http.response.status_code", "201", "user_agent.original", "kubectl/v1.36.3"),
		sp("t1", "au", "r", "audit", 0.016, 41.9),
		sp("t1", "ci", "au", "constrainedimpersonation", 0.02, 41.9),
		sp("t1", "pf", "ci", "priorityandfairness", 0.044, 41.9),
		sp("t1", "az", "pf", "authorization", 0.155, 41.8),
		sp("t1", "cr", "az", "Create", 7.823, 41.8),
		sp("t1", "et", "cr", "Create etcd3", 27.276, 41.761, "key", "/pods/default/web-1", "resource", "pods"),
		sp("t1", "tx", "et", "etcdserverpb.KV/Txn", 27.4, 41.7),
	}
}

func bindTrace() []Span {
	return []Span{
		sp("t2", "b", "", "POST /api/v1/namespaces/{:namespace}/pods/{:name}/binding", 100, 194.7,
			"url.path", "/api/v1/namespaces/default/pods/web-1/binding", "http.response.status_code", "201"),
		sp("t2", "b1", "b", "audit", 100.005, 194.6),
	}
}

// syncTrace is the kubelet's first syncPod with its CRI client spans and,
// inside two of them, containerd's server spans.
func syncTrace() []Span {
	k := func(id, parent, name string, start, end float64, attrs ...string) Span {
		s := sp("t3", id, parent, name, start, end, attrs...)
		s.Service, s.Host = "kubelet", "node-1"
		return s
	}
	c := func(id, parent, name string, start, end float64) Span {
		s := sp("t3", id, parent, name, start, end)
		s.Service = "containerd"
		return s
	}
	return []Span{
		k("s", "", "syncPod", 200, 4500, "k8s.pod.name", "web-1", "k8s.namespace.name", "default", "k8s.pod.uid", "u-1", "k8s.pod.update_type", "create"),
		k("c1", "s", "runtime.v1.RuntimeService/RunPodSandbox", 210, 400),
		c("d1", "c1", "runtime.v1.RuntimeService/RunPodSandbox", 211, 399),
		k("c2", "s", "runtime.v1.ImageService/PullImage", 405, 3405),
		c("d2", "c2", "runtime.v1.ImageService/PullImage", 406, 3404),
		k("c3", "s", "runtime.v1.RuntimeService/CreateContainer", 3410, 3450),
		k("c4", "s", "runtime.v1.RuntimeService/StartContainer", 3452, 3500),
	}
}

type row struct {
	stage      stages.ID
	component  string
	start, end time.Time
	status     stages.Status
}

func foldAll(spans ...[]Span) []row {
	var mu sync.Mutex
	var evs []stages.Event
	f := NewFolder(stages.EmitterFunc(func(e stages.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() }), 0)
	for _, s := range spans {
		f.Add(s...)
		f.Flush()
	}
	var rows []row
	open := map[stages.ID]stages.Event{}
	for _, e := range evs {
		if e.Namespace != "default" || e.Pod != "web-1" {
			continue
		}
		if e.Status == stages.Started {
			open[e.Stage] = e
			continue
		}
		rows = append(rows, row{e.Stage, e.Component, open[e.Stage].Time, e.Time, e.Status})
	}
	return rows
}

func TestFoldPodLifecycle(t *testing.T) {
	got := foldAll(createTrace(), bindTrace(), syncTrace())
	want := []row{
		{stages.Authn, "kube-apiserver", ms(-0.01), ms(0.016), stages.Succeeded},
		{stages.Authz, "kube-apiserver", ms(0.155), ms(7.823), stages.Succeeded},
		{stages.Admission, "kube-apiserver", ms(7.823), ms(27.276), stages.Succeeded},
		{stages.Persist, "kube-apiserver", ms(27.276), ms(41.761), stages.Succeeded},
		{stages.Schedule, "kube-scheduler", ms(41.761), ms(100), stages.Succeeded},
		{stages.Bind, "kube-scheduler", ms(100), ms(194.7), stages.Succeeded},
		{stages.Kubelet, "kubelet", ms(200), ms(210), stages.Succeeded},
		{stages.Sandbox, "kubelet", ms(210), ms(400), stages.Succeeded},
		{stages.Pull, "kubelet", ms(405), ms(3405), stages.Succeeded},
		{stages.Create, "kubelet", ms(3410), ms(3450), stages.Succeeded},
		{stages.Start, "kubelet", ms(3452), ms(3500), stages.Succeeded},
	}
	if len(got) != len(want) {
		t.Fatalf("folded %d stages, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("stage %d:\n got %v %s %s..%s %s\nwant %v %s %s..%s %s", i,
				got[i].stage, got[i].component, got[i].start.Sub(t0), got[i].end.Sub(t0), got[i].status,
				want[i].stage, want[i].component, want[i].start.Sub(t0), want[i].end.Sub(t0), want[i].status)
		}
	}
}

func TestFoldRefusedBindingAndCreate(t *testing.T) {
	b := bindTrace()
	b[0].Attrs["http.response.status_code"] = "409"
	c := createTrace()[:7] // no etcd write: refused in admission; the pod's name is unknown
	got := foldAll(c, b)
	if len(got) != 1 || got[0].stage != stages.Bind || got[0].status != stages.Failed {
		t.Errorf("folded %v, want only a failed bind (no schedule without the write, no stages of a refused create)", got)
	}
}

func TestPodFromPaths(t *testing.T) {
	for _, tt := range []struct {
		in, ns, name string
		ok           bool
		f            func(string) (string, string, bool)
	}{
		{"/pods/default/web-1", "default", "web-1", true, podFromKey},
		{"/registry/pods/kube-system/dns", "kube-system", "dns", true, podFromKey},
		{"/deployments/default/web", "", "", false, podFromKey},
		{"/api/v1/namespaces/shop/pods/web-1/binding", "shop", "web-1", true, podFromBinding},
		{"/api/v1/namespaces/shop/pods/web-1/status", "", "", false, podFromBinding},
	} {
		ns, name, ok := tt.f(tt.in)
		if ns != tt.ns || name != tt.name || ok != tt.ok {
			t.Errorf("%s: got %q %q %v, want %q %q %v", tt.in, ns, name, ok, tt.ns, tt.name, tt.ok)
		}
	}
}

// exportClient dials a receiver started on 127.0.0.1.
func exportClient(t *testing.T) (*Receiver, collectortrace.TraceServiceClient, *[]stages.Event, *sync.Mutex) {
	t.Helper()
	var mu sync.Mutex
	var evs []stages.Event
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, err := Listen(ctx, "127.0.0.1:0", stages.EmitterFunc(func(e stages.Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(r.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return r, collectortrace.NewTraceServiceClient(conn), &evs, &mu
}

// request wraps OTLP spans of one service in an export request.
func request(service string, spans ...*tracepb.Span) *collectortrace.ExportTraceServiceRequest {
	return &collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name",
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: service}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}}
}

func otlpSpan(name string, traceID, spanID []byte, attrs map[string]string) *tracepb.Span {
	s := &tracepb.Span{Name: name, TraceId: traceID, SpanId: spanID,
		StartTimeUnixNano: uint64(t0.UnixNano()), EndTimeUnixNano: uint64(t0.Add(3 * time.Millisecond).UnixNano())}
	for k, v := range attrs {
		s.Attributes = append(s.Attributes, &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}})
	}
	return s
}

var (
	traceID = []byte("0123456789abcdef")
	spanID  = []byte("span-id1")
)

// TestReceiverRefusesAndKeepsRunning sends an oversized export, a span
// with a malformed trace ID and bytes that are no protobuf: each is
// refused with a gRPC error saying why, and a good export after them is
// received and folded.
func TestReceiverRefusesAndKeepsRunning(t *testing.T) {
	r, client, evs, mu := exportClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	big := otlpSpan("huge", traceID, spanID, map[string]string{"blob": strings.Repeat("x", MaxExportBytes+1)})
	_, err := client.Export(ctx, request("apiserver", big))
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "larger than max") {
		t.Errorf("oversized export: err = %v, want ResourceExhausted saying it is larger than the maximum", err)
	}

	_, err = client.Export(ctx, request("apiserver", otlpSpan("bad", []byte("abc"), spanID, nil)))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `span 0 ("bad") of service "apiserver": trace_id has 3 bytes, want 16`) {
		t.Errorf("malformed span: err = %v, want InvalidArgument naming the span and its trace_id", err)
	}

	conn, err := grpc.NewClient(r.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Invoke(ctx, "/opentelemetry.proto.collector.trace.v1.TraceService/Export", &rawBytes{0xff, 0xff, 0xff, 0x01},
		new(rawBytes), grpc.ForceCodecV2(rawCodec{}))
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "error unmarshalling request") {
		t.Errorf("undecodable export: err = %v, want gRPC's Internal saying it cannot unmarshal the request", err)
	}

	bind := otlpSpan("POST /api/v1/namespaces/{:namespace}/pods/{:name}/binding", traceID, spanID,
		map[string]string{"url.path": "/api/v1/namespaces/default/pods/web-1/binding"})
	if _, err := client.Export(ctx, request("apiserver", bind)); err != nil {
		t.Fatalf("good export after the refused ones: %v", err)
	}
	r.Stop() // folds what is held
	mu.Lock()
	defer mu.Unlock()
	if len(*evs) != 2 || (*evs)[1].Stage != stages.Bind || (*evs)[1].DurationMs != 3 {
		t.Errorf("events after the good export: %v, want bind started and succeeded, 3ms", *evs)
	}
}

func TestOperatorConfig(t *testing.T) {
	out, err := OperatorConfig("10.0.0.5:4317")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"--tracing-config-file=", "apiVersion: apiserver.config.k8s.io/v1", "kind: TracingConfiguration",
		"endpoint: 10.0.0.5:4317", "samplingRatePerMillion: 1000000",
		"tracing:\n  endpoint: 10.0.0.5:4317\n  samplingRatePerMillion: 1000000",
		`Environment="OTEL_EXPORTER_OTLP_ENDPOINT=http://10.0.0.5:4317"`, `Environment="OTEL_EXPORTER_OTLP_PROTOCOL=grpc"`,
		`Environment="OTEL_TRACES_SAMPLER_ARG=1.0"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tracing config lacks %q:\n%s", want, out)
		}
	}
}

// rawBytes and rawCodec send bytes as they are, to test what the
// receiver does with a request that is no protobuf.
type rawBytes []byte

type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*rawBytes))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*rawBytes) = data.Materialize()
	return nil
}

// TestAuthnSpanLateOrParent covers the two ways kube-apiserver sends the
// authentication filter's span: a trace of its own that arrives after the
// request's trace was folded (a request from an unprivileged user), and
// the request's parent in the same trace (system:masters).
func TestAuthnSpanLateOrParent(t *testing.T) {
	late := createTrace()
	authn := late[0]
	privileged := createTrace()
	privileged[0].Trace = "t1"
	privileged[1].Parent = "x1"
	for name, groups := range map[string][][]Span{
		"late":       {late[1:], {authn}},
		"privileged": {privileged},
	} {
		t.Run(name, func(t *testing.T) {
			var found []row
			for _, r := range foldAll(groups...) {
				if r.stage == stages.Authn {
					found = append(found, r)
				}
			}
			want := row{stages.Authn, "kube-apiserver", ms(-0.01), ms(0.016), stages.Succeeded}
			if len(found) != 1 || found[0] != want {
				t.Errorf("authn rows %v, want one %v", found, want)
			}
		})
	}
}
