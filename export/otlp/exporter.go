package otlp

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/podtrace/podtrace/stages"
)

// scopeName is the instrumentation scope of podtrace's spans.
const scopeName = "github.com/podtrace/podtrace/export/otlp"

// podtrace's own span attributes, beside OpenTelemetry's Kubernetes ones.
const (
	attrStage     = attribute.Key("podtrace.stage")
	attrComponent = attribute.Key("podtrace.component")
	attrAttempt   = attribute.Key("podtrace.attempt")
	attrReason    = attribute.Key("podtrace.reason")
	attrMessage   = attribute.Key("podtrace.message")
	attrVerb      = attribute.Key("podtrace.verb")
	attrNextTry   = attribute.Key("podtrace.next_try")
	// attrUnfinished marks a span podtrace ended itself: its stage had not
	// finished when podtrace stopped watching (or began again).
	attrUnfinished = attribute.Key("podtrace.unfinished")
)

// Exporter turns stage events into spans: per object (a pod, a ReplicaSet,
// ...) a trace whose ID comes from the object's UID, a root span named after
// the object, and a child span per stage, container and attempt, from the
// stage's started event to its succeeded, failed or retrying one. Emit never
// waits on the network: spans are queued for a batch exporter that drops
// them when its queue is full.
type Exporter struct {
	tp       *sdktrace.TracerProvider
	tracer   trace.Tracer
	endpoint string

	mu      sync.Mutex
	objects map[string]*object // by kind/namespace/name
}

// object is one object's trace: its root span, started once the object
// rests (so that it covers every stage, whatever order their events came
// in), and its open stage spans, children of the root's span ID from the
// first.
type object struct {
	kind, namespace, name, uid, node string

	ids         ids
	ctx         context.Context // carries the root's span context, for its children
	first, last time.Time       // the earliest start and the latest event
	ended       bool            // the root span was sent
	open        map[spanKey]trace.Span
}

// spanKey names one attempt of one stage of one container.
type spanKey struct {
	stage     stages.ID
	container string
	attempt   int
}

func newExporter(tp *sdktrace.TracerProvider, endpoint string) *Exporter {
	return &Exporter{tp: tp, tracer: tp.Tracer(scopeName), endpoint: endpoint, objects: map[string]*object{}}
}

// Endpoint is where the spans go, as the environment gave it.
func (x *Exporter) Endpoint() string { return x.endpoint }

// Emit folds one stage event into the spans. Safe for concurrent use.
func (x *Exporter) Emit(e stages.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	o := x.object(e)
	o.last = later(o.last, e.Time)
	if e.Node != "" && o.node == "" {
		o.node = e.Node
	}
	k := spanKey{e.Stage, e.Container, max(e.Attempt, 1)}
	switch e.Status {
	case stages.Started:
		if s, ok := o.open[k]; ok { // a new start of an attempt still open: the old one ended here
			s.SetAttributes(attrUnfinished.Bool(true))
			s.End(trace.WithTimestamp(e.Time))
		}
		o.open[k] = x.startStage(o, e, e.Time)
	case stages.Waiting:
		s := x.openSpan(o, k, e)
		s.AddEvent("waiting", trace.WithTimestamp(e.Time), trace.WithAttributes(reasonAttrs(e)...))
	default: // succeeded, failed, retrying: the attempt ends
		s := x.openSpan(o, k, e)
		delete(o.open, k)
		endStage(s, e)
	}
	if restsAfter(o, e) {
		x.endRoot(o)
	}
}

// object returns the trace of e's object, starting one for an object not
// seen before or seen with another UID (deleted and created again under
// its name).
func (x *Exporter) object(e stages.Event) *object {
	kind := kindOf(e)
	key := kind + "/" + e.Key()
	o := x.objects[key]
	if o != nil && (e.UID == "" || e.UID == o.uid) {
		return o
	}
	if o != nil && o.uid == "" && !o.ended { // refused, then created: the UID comes with the write
		o.uid = e.UID
		return o
	}
	if o != nil {
		x.endObject(o)
	}
	o = &object{kind: kind, namespace: e.Namespace, name: e.Pod, uid: e.UID, node: e.Node,
		ids: idsFor(kind, e.Namespace, e.Pod, e.UID), first: e.Time, last: e.Time, open: map[spanKey]trace.Span{}}
	o.ctx = trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: o.ids.trace, SpanID: o.ids.root, TraceFlags: trace.FlagsSampled}))
	x.objects[key] = o
	return o
}

// endRoot sends o's root span, from its earliest stage start to its
// latest event, with the object's attributes.
func (x *Exporter) endRoot(o *object) {
	if o.ended {
		return
	}
	attrs := []attribute.KeyValue{semconv.K8SNamespaceName(o.namespace), nameAttr(o.kind, o.name)}
	if o.uid != "" {
		attrs = append(attrs, uidAttr(o.kind, o.uid))
	}
	if o.node != "" {
		attrs = append(attrs, semconv.K8SNodeName(o.node))
	}
	_, root := x.tracer.Start(withIDs(context.Background(), o.ids), o.kind+" "+o.namespace+"/"+o.name,
		trace.WithTimestamp(o.first), trace.WithAttributes(attrs...))
	root.End(trace.WithTimestamp(o.last))
	o.ended = true
}

// endObject ends o's open spans, and its root, at its last event: they
// never finished while podtrace watched.
func (x *Exporter) endObject(o *object) {
	for k, s := range o.open {
		s.SetAttributes(attrUnfinished.Bool(true))
		s.End(trace.WithTimestamp(o.last))
		delete(o.open, k)
	}
	x.endRoot(o)
}

// openSpan returns the open span of k, or starts it at the event's start
// (its time less its duration) when its started event never came.
func (x *Exporter) openSpan(o *object, k spanKey, e stages.Event) trace.Span {
	if s, ok := o.open[k]; ok {
		return s
	}
	start := e.Time.Add(-time.Duration(e.DurationMs * float64(time.Millisecond)))
	o.first = earlier(o.first, start)
	s := x.startStage(o, e, start)
	o.open[k] = s
	return s
}

// startStage starts the span of e's stage attempt under o's root.
func (x *Exporter) startStage(o *object, e stages.Event, at time.Time) trace.Span {
	o.first = earlier(o.first, at)
	attrs := []attribute.KeyValue{semconv.K8SNamespaceName(e.Namespace), nameAttr(o.kind, e.Pod),
		attrStage.String(string(e.Stage)), attrComponent.String(e.Component), attrAttempt.Int(max(e.Attempt, 1))}
	if o.uid != "" {
		attrs = append(attrs, uidAttr(o.kind, o.uid))
	}
	if e.Node != "" {
		attrs = append(attrs, semconv.K8SNodeName(e.Node))
	}
	if e.Container != "" {
		attrs = append(attrs, semconv.K8SContainerName(e.Container))
	}
	if e.User != "" {
		attrs = append(attrs, semconv.UserName(e.User))
	}
	if e.UserAgent != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(e.UserAgent))
	}
	if e.Verb != "" {
		attrs = append(attrs, attrVerb.String(e.Verb))
	}
	name := string(e.Stage)
	if e.Container != "" {
		name += " " + e.Container
	}
	_, s := x.tracer.Start(o.ctx, name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	return s
}

// endStage ends an attempt's span at e: Error for a failed or retrying
// attempt, with the stage's reason and message.
func endStage(s trace.Span, e stages.Event) {
	s.SetAttributes(reasonAttrs(e)...)
	if e.Node != "" {
		s.SetAttributes(semconv.K8SNodeName(e.Node))
	}
	if e.NextTry != nil {
		s.SetAttributes(attrNextTry.String(e.NextTry.UTC().Format(time.RFC3339Nano)))
	}
	if e.Status == stages.Failed || e.Status == stages.Retrying {
		desc := e.Message
		if desc == "" {
			desc = e.Reason
		}
		s.SetStatus(codes.Error, desc)
	}
	s.End(trace.WithTimestamp(e.Time))
}

// reasonAttrs are the event's Kubernetes reason and message, where it has them.
func reasonAttrs(e stages.Event) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if e.Reason != "" {
		attrs = append(attrs, attrReason.String(e.Reason))
	}
	if e.Message != "" {
		attrs = append(attrs, attrMessage.String(e.Message))
	}
	return attrs
}

// restsAfter reports whether o reached a resting point with e, where its
// root span ends: a pod Ready or deleted; another object once none of its
// stages is open.
func restsAfter(o *object, e stages.Event) bool {
	if o.ended || !e.Status.Terminal() {
		return false
	}
	if o.kind == stages.KindPod {
		return e.Stage == stages.Delete || e.Stage == stages.Ready && e.Status == stages.Succeeded
	}
	return len(o.open) == 0
}

// Flush ends every open span at its object's last event and sends what is
// queued. The spans of objects seen again later go on in the same traces.
func (x *Exporter) Flush(ctx context.Context) error {
	x.mu.Lock()
	for _, o := range x.objects {
		x.endObject(o)
	}
	x.mu.Unlock()
	if err := x.tp.ForceFlush(ctx); err != nil {
		return fmt.Errorf("export traces to %s: %w", x.endpoint, err)
	}
	return nil
}

// Shutdown ends every open span, sends what is queued, within ctx, and stops.
func (x *Exporter) Shutdown(ctx context.Context) error {
	x.mu.Lock()
	for _, o := range x.objects {
		x.endObject(o)
	}
	x.mu.Unlock()
	if err := x.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("export traces to %s: %w", x.endpoint, err)
	}
	return nil
}

// nameAttr is k8s.<kind>.name for the object's kind.
func nameAttr(kind, name string) attribute.KeyValue {
	if f, ok := kindAttrs[kind]; ok {
		return f.name(name)
	}
	return attribute.String("k8s.object.name", name)
}

// uidAttr is k8s.<kind>.uid for the object's kind.
func uidAttr(kind, uid string) attribute.KeyValue {
	if f, ok := kindAttrs[kind]; ok {
		return f.uid(uid)
	}
	return attribute.String("k8s.object.uid", uid)
}

// kindAttrs maps each kind podtrace traces to its semantic-convention keys.
var kindAttrs = map[string]struct {
	name, uid func(string) attribute.KeyValue
}{
	stages.KindPod:         {semconv.K8SPodName, semconv.K8SPodUID},
	stages.KindReplicaSet:  {semconv.K8SReplicaSetName, semconv.K8SReplicaSetUID},
	stages.KindDeployment:  {semconv.K8SDeploymentName, semconv.K8SDeploymentUID},
	stages.KindStatefulSet: {semconv.K8SStatefulSetName, semconv.K8SStatefulSetUID},
	stages.KindDaemonSet:   {semconv.K8SDaemonSetName, semconv.K8SDaemonSetUID},
	stages.KindJob:         {semconv.K8SJobName, semconv.K8SJobUID},
	stages.KindCronJob:     {semconv.K8SCronJobName, semconv.K8SCronJobUID},
}

// kindOf is the event's kind, Pod when it names none.
func kindOf(e stages.Event) string {
	if e.Kind == "" {
		return stages.KindPod
	}
	return e.Kind
}

// earlier is the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
