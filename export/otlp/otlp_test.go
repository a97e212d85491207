package otlp

import (
	"context"
	"encoding/hex"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"

	"github.com/podtrace/podtrace/stages"
)

// receiver is an in-process OTLP/gRPC trace collector on 127.0.0.1.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	spans    []*tracepb.Span
	resource map[string]string
}

func (r *receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		r.resource = attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *receiver) got() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

// startReceiver serves a receiver and points the OTLP environment at it.
func startReceiver(t *testing.T) *receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	r := &receiver{}
	collectortrace.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	t.Setenv(EnvEndpoint, "http://"+l.Addr().String())
	t.Setenv(EnvProtocol, "grpc")
	return r
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.GetKey()] = v.GetStringValue()
		case v.GetIntValue() != 0:
			m[kv.GetKey()] = strconv.FormatInt(v.GetIntValue(), 10)
		case v.GetBoolValue():
			m[kv.GetKey()] = "true"
		}
	}
	return m
}

const uidA = "6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b"

// podEvents is a pod's way to Ready on node-1 with a pull that fails once.
func podEvents(t0 time.Time) []stages.Event {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, stage stages.ID, st stages.Status, attempt int, reason, msg string) stages.Event {
		e := stages.Event{Time: at(ms), Namespace: "default", Pod: "web-1", UID: uidA, Stage: stage, Status: st,
			Component: "kubelet", Attempt: attempt, Reason: reason, Message: msg}
		if stage.Index() >= stages.Kubelet.Index() {
			e.Node = "node-1"
		}
		if stage == stages.Pull || stage == stages.Start {
			e.Container = "web"
		}
		return e
	}
	return []stages.Event{
		ev(0, stages.Persist, stages.Started, 1, "", ""),
		ev(4, stages.Persist, stages.Succeeded, 1, "", ""),
		ev(10, stages.Schedule, stages.Started, 1, "", ""),
		ev(12, stages.Schedule, stages.Succeeded, 1, "Scheduled", "Successfully assigned default/web-1 to node-1"),
		ev(20, stages.Pull, stages.Started, 1, "Pulling", ""),
		ev(50, stages.Pull, stages.Retrying, 1, "ErrImagePull", "rpc error: pull access denied"),
		ev(80, stages.Pull, stages.Started, 2, "Pulling", ""),
		ev(90, stages.Pull, stages.Succeeded, 2, "Pulled", ""),
		ev(95, stages.Start, stages.Started, 1, "", ""),
		ev(99, stages.Start, stages.Succeeded, 1, "Started", ""),
		ev(100, stages.Ready, stages.Started, 1, "", ""),
		ev(130, stages.Ready, stages.Succeeded, 1, "", ""),
	}
}

func TestExportTreePerPod(t *testing.T) {
	r := startReceiver(t)
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "k8s.cluster.name=lab")
	x, err := Start(context.Background(), "v-test")
	if err != nil || x == nil {
		t.Fatalf("Start = %v, %v; want an exporter", x, err)
	}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, e := range podEvents(t0) {
		x.Emit(e)
	}
	// Another pod, never finished: its spans end at its last event on shutdown.
	x.Emit(stages.Event{Time: t0, Namespace: "default", Pod: "stuck", UID: "uid-stuck", Stage: stages.Schedule, Status: stages.Started})
	x.Emit(stages.Event{Time: t0.Add(time.Second), Namespace: "default", Pod: "stuck", UID: "uid-stuck", Stage: stages.Schedule,
		Status: stages.Retrying, Reason: "FailedScheduling", Message: "0/1 nodes are available"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := x.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans := r.got()
	if r.resource["service.name"] != "podtrace" || r.resource["k8s.cluster.name"] != "lab" {
		t.Errorf("resource = %v, want service.name podtrace and OTEL_RESOURCE_ATTRIBUTES' k8s.cluster.name", r.resource)
	}
	byTrace := map[string][]*tracepb.Span{}
	for _, s := range spans {
		byTrace[hex.EncodeToString(s.GetTraceId())] = append(byTrace[hex.EncodeToString(s.GetTraceId())], s)
	}
	if len(byTrace) != 2 {
		t.Fatalf("got %d traces, want one per pod (2)", len(byTrace))
	}
	web := byTrace[strings.ReplaceAll(uidA, "-", "")]
	if web == nil {
		t.Fatalf("no trace with the pod's UID as its ID; traces %v", keys(byTrace))
	}
	var root *tracepb.Span
	for _, s := range web {
		if len(s.GetParentSpanId()) == 0 {
			if root != nil {
				t.Fatalf("two root spans: %q and %q", root.GetName(), s.GetName())
			}
			root = s
		}
	}
	if root == nil || root.GetName() != "Pod default/web-1" {
		t.Fatalf("root span = %v, want Pod default/web-1", root)
	}
	ra := attrs(root.GetAttributes())
	for k, want := range map[string]string{"k8s.pod.name": "web-1", "k8s.pod.uid": uidA, "k8s.namespace.name": "default", "k8s.node.name": "node-1"} {
		if ra[k] != want {
			t.Errorf("root %s = %q, want %q", k, ra[k], want)
		}
	}
	if got, want := time.Unix(0, int64(root.GetStartTimeUnixNano())).Sub(t0), time.Duration(0); got != want {
		t.Errorf("root starts %s after the first event, want %s", got, want)
	}
	if got, want := time.Unix(0, int64(root.GetEndTimeUnixNano())).Sub(t0), 130*time.Millisecond; got != want {
		t.Errorf("root ends %s after the first event, want %s (Ready)", got, want)
	}
	type row struct {
		name, attempt, node, reason, status string
		start, end                          time.Duration
	}
	var got []row
	for _, s := range web {
		if s == root {
			continue
		}
		if string(s.GetParentSpanId()) != string(root.GetSpanId()) {
			t.Errorf("span %q is not a child of the pod's root span", s.GetName())
		}
		a := attrs(s.GetAttributes())
		if a["k8s.pod.uid"] != uidA || a["k8s.pod.name"] != "web-1" || a["k8s.namespace.name"] != "default" {
			t.Errorf("span %q attributes %v lack the pod's k8s attributes", s.GetName(), a)
		}
		got = append(got, row{s.GetName(), a["podtrace.attempt"], a["k8s.node.name"], a["podtrace.reason"], s.GetStatus().GetCode().String(),
			time.Unix(0, int64(s.GetStartTimeUnixNano())).Sub(t0), time.Unix(0, int64(s.GetEndTimeUnixNano())).Sub(t0)})
	}
	sort.Slice(got, func(i, j int) bool { return got[i].start < got[j].start })
	ms := time.Millisecond
	want := []row{
		{"persist", "1", "", "", "STATUS_CODE_UNSET", 0, 4 * ms},
		{"schedule", "1", "", "Scheduled", "STATUS_CODE_UNSET", 10 * ms, 12 * ms},
		{"pull web", "1", "node-1", "ErrImagePull", "STATUS_CODE_ERROR", 20 * ms, 50 * ms},
		{"pull web", "2", "node-1", "Pulled", "STATUS_CODE_UNSET", 80 * ms, 90 * ms},
		{"start web", "1", "node-1", "Started", "STATUS_CODE_UNSET", 95 * ms, 99 * ms},
		{"ready", "1", "node-1", "", "STATUS_CODE_UNSET", 100 * ms, 130 * ms},
	}
	if len(got) != len(want) {
		t.Fatalf("stage spans:\n got %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("stage span %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	for _, s := range spans {
		if s.GetName() == "schedule" && hex.EncodeToString(s.GetTraceId()) != strings.ReplaceAll(uidA, "-", "") {
			if s.GetStatus().GetMessage() != "0/1 nodes are available" {
				t.Errorf("stuck pod's schedule status message = %q, want the FailedScheduling message", s.GetStatus().GetMessage())
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestEmitNeverBlocksWhenEndpointDown emits a busy cluster's worth of events
// at an endpoint nobody listens on: Emit must not wait for the network, and
// Shutdown must give up when its context does.
func TestEmitNeverBlocksWhenEndpointDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	t.Setenv(EnvEndpoint, "http://"+addr)
	t.Setenv(EnvProtocol, "grpc")
	x, err := Start(context.Background(), "v-test")
	if err != nil || x == nil {
		t.Fatalf("Start = %v, %v", x, err)
	}
	t0 := time.Now()
	begin := time.Now()
	for i := range 5000 {
		for _, e := range podEvents(t0) {
			e.Pod = e.Pod + "-" + string(rune('a'+i%26)) + hex.EncodeToString([]byte{byte(i >> 8), byte(i)})
			e.UID = ""
			x.Emit(e)
		}
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("60,000 events took %s to emit with the endpoint down; Emit must not wait on the network", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	begin = time.Now()
	_ = x.Shutdown(ctx) // an error is expected: nothing received the spans
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("Shutdown took %s with a 500ms context", d)
	}
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    string // endpoint; empty = off
		wantErr string
	}{
		{"nothing set: off", nil, "", ""},
		{"endpoint", map[string]string{EnvEndpoint: "http://127.0.0.1:4317"}, "http://127.0.0.1:4317", ""},
		{"traces endpoint wins", map[string]string{EnvEndpoint: "http://a:4317", EnvTracesEndpoint: "http://127.0.0.1:14317"}, "http://127.0.0.1:14317", ""},
		{"grpc protocol", map[string]string{EnvEndpoint: "127.0.0.1:4317", EnvProtocol: "grpc"}, "127.0.0.1:4317", ""},
		{"http protocol refused", map[string]string{EnvEndpoint: "http://127.0.0.1:4318", EnvProtocol: "http/protobuf"}, "", "gRPC only"},
		{"traces protocol wins", map[string]string{EnvEndpoint: "127.0.0.1:4317", EnvProtocol: "http/protobuf", EnvTracesProtocol: "grpc"}, "127.0.0.1:4317", ""},
		{"exporter none", map[string]string{EnvEndpoint: "127.0.0.1:4317", EnvTracesExporter: "none"}, "", ""},
		{"exporter console refused", map[string]string{EnvEndpoint: "127.0.0.1:4317", EnvTracesExporter: "console"}, "", "otlp only"},
		{"sdk disabled", map[string]string{EnvEndpoint: "127.0.0.1:4317", EnvSDKDisabled: "true"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := FromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || s.Endpoint != tt.want {
				t.Fatalf("FromEnv = %q, %v; want %q", s.Endpoint, err, tt.want)
			}
		})
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{"http://127.0.0.1:4317": "127.0.0.1:4317", "https://tempo:4317/": "tempo:4317", "127.0.0.1:4317": "127.0.0.1:4317"} {
		if got := (Settings{Endpoint: in}).HostPort(); got != want {
			t.Errorf("HostPort(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIDsStable(t *testing.T) {
	a, b := idsFor("Pod", "ns", "p", uidA), idsFor("Pod", "ns", "p", uidA)
	if a != b || hex.EncodeToString(a.trace[:]) != strings.ReplaceAll(uidA, "-", "") || !a.root.IsValid() {
		t.Errorf("idsFor(UUID) = %v, %v; want the UID as trace ID, twice the same", a, b)
	}
	if c := idsFor("Pod", "ns", "p", "not-a-uuid"); !c.trace.IsValid() || c == idsFor("Pod", "ns", "q", "not-a-uuid") {
		t.Errorf("hashed IDs must be valid and differ by name: %v", c)
	}
}
