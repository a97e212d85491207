// Package spans is attach's OTLP/gRPC trace receiver: a real cluster's own
// spans (kube-apiserver's request filters, its etcd write and the binding;
// the kubelet's syncPod; containerd 2.x's CRI calls) folded into stage
// events with millisecond start and end, beside the ones attach rebuilds
// from Events at one-second resolution. OperatorConfig says what to set
// on the cluster so that it sends them.
package spans

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/podtrace/podtrace/stages"
)

// MaxExportBytes is the largest export request the receiver accepts: a
// batch of 512 spans, the OpenTelemetry SDKs' default, is far below it.
const MaxExportBytes = 8 << 20

// Receiver is an OTLP/gRPC trace service that folds what it receives into
// stage events.
type Receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	srv  *grpc.Server
	ln   net.Listener
	fold *Folder
}

// Listen starts a receiver on addr (host:port), sending the stage events
// it folds to emit. It serves until ctx ends or Stop is called.
func Listen(ctx context.Context, addr string, emit stages.Emitter) (*Receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("OTLP receiver: %w", err)
	}
	r := &Receiver{ln: ln, srv: grpc.NewServer(grpc.MaxRecvMsgSize(MaxExportBytes)), fold: NewFolder(emit, Hold)}
	collectortrace.RegisterTraceServiceServer(r.srv, r)
	go func() { _ = r.srv.Serve(ln) }()
	go r.fold.Run(ctx)
	context.AfterFunc(ctx, r.Stop)
	return r, nil
}

// Addr is the address the receiver listens on.
func (r *Receiver) Addr() string { return r.ln.Addr().String() }

// Stop stops serving and folds what is held.
func (r *Receiver) Stop() {
	r.srv.Stop()
	r.fold.Flush()
}

// Export receives one batch of spans. A batch with a malformed span is
// refused whole with InvalidArgument, saying which span and why; an
// oversized one never reaches here (gRPC answers ResourceExhausted).
func (r *Receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var batch []Span
	for _, rs := range req.GetResourceSpans() {
		service, host := "", ""
		for _, kv := range rs.GetResource().GetAttributes() {
			switch kv.GetKey() {
			case "service.name":
				service = kv.GetValue().GetStringValue()
			case "host.name":
				host = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp, err := convert(s, service, host)
				if err != nil {
					return nil, status.Errorf(codes.InvalidArgument, "span %d (%q) of service %q: %v", len(batch), s.GetName(), service, err)
				}
				batch = append(batch, sp)
			}
		}
	}
	r.fold.Add(batch...)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// convert checks an OTLP span and keeps what the fold reads.
func convert(s *tracepb.Span, service, host string) (Span, error) {
	if n := len(s.GetTraceId()); n != 16 {
		return Span{}, fmt.Errorf("trace_id has %d bytes, want 16", n)
	}
	if n := len(s.GetSpanId()); n != 8 {
		return Span{}, fmt.Errorf("span_id has %d bytes, want 8", n)
	}
	if n := len(s.GetParentSpanId()); n != 0 && n != 8 {
		return Span{}, fmt.Errorf("parent_span_id has %d bytes, want 8 or none", n)
	}
	if s.GetEndTimeUnixNano() < s.GetStartTimeUnixNano() {
		return Span{}, fmt.Errorf("ends (%d) before it starts (%d)", s.GetEndTimeUnixNano(), s.GetStartTimeUnixNano())
	}
	sp := Span{Trace: hex.EncodeToString(s.GetTraceId()), ID: hex.EncodeToString(s.GetSpanId()),
		Parent: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Service: service, Host: host,
		Client: s.GetKind() == tracepb.Span_SPAN_KIND_CLIENT, Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
		Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
		Attrs: map[string]string{}}
	for _, kv := range s.GetAttributes() {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			sp.Attrs[kv.GetKey()] = v.GetStringValue()
		case v.GetIntValue() != 0:
			sp.Attrs[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
		}
	}
	return sp, nil
}
