package apiserver

import (
	"bytes"
	"io"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// requestTrace times one request's API stages so they can be reported once
// the object they belong to is known.
type requestTrace struct {
	clock clock.PassiveClock
	info  requestInfo
	user  *authn.User
	agent string
	spans []apiSpan
	ref   trace.Ref // the object, once known (faults and breakpoints)
	// emitted counts the spans already reported; persistOpen is set once the
	// persist stage's start has been reported ahead of the etcd write.
	emitted     int
	persistOpen bool
}

type apiSpan struct {
	stage      stages.ID
	start, end time.Time
	err        error
	plugin     string
}

func newRequestTrace(c clock.PassiveClock, r *http.Request) *requestTrace {
	return &requestTrace{clock: c, agent: r.UserAgent()}
}

func (rt *requestTrace) begin() time.Time { return rt.clock.Now() }

func (rt *requestTrace) end(start time.Time, stage stages.ID, err error) {
	rt.spans = append(rt.spans, apiSpan{stage: stage, start: start, end: rt.clock.Now(), err: err})
}

// endPlugin is end for admission, naming the plugin that rejected.
func (rt *requestTrace) endPlugin(start time.Time, err error, plugin string) {
	rt.end(start, stages.Admission, err)
	rt.spans[len(rt.spans)-1].plugin = plugin
}

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true}

// finish reports the request's API stages for traced resources' writes. obj
// is the object written (nil when the request failed before decoding it).
func (s *Server) finish(rt *requestTrace, r *http.Request, obj runtime.Object) {
	ref, ok := s.traceRef(rt, r, obj)
	if !ok {
		return
	}
	for _, sp := range rt.spans[rt.emitted:] {
		status, reason, msg := stages.Succeeded, "", ""
		if sp.err != nil {
			st := apiStatus(sp.err)
			status, reason, msg = stages.Failed, string(st.Reason), st.Message
			if sp.plugin != "" {
				msg = sp.plugin + ": " + msg
			}
		}
		edit := func(e *stages.Event) { e.User, e.UserAgent, e.Verb = rt.userName(), rt.agent, rt.info.verb }
		if sp.stage == stages.Persist && rt.persistOpen {
			s.cfg.Tracer.Emit(stages.Event{Time: sp.end, Kind: ref.Kind, Namespace: ref.Namespace, Pod: ref.Name,
				UID: ref.UID, Stage: sp.stage, Status: status, Component: "kube-apiserver", Attempt: 1,
				DurationMs: float64(sp.end.Sub(sp.start).Microseconds()) / 1000, Reason: reason, Message: msg,
				User: rt.userName(), UserAgent: rt.agent, Verb: rt.info.verb})
			continue
		}
		s.cfg.Tracer.Record(ref, sp.stage, "kube-apiserver", sp.start, sp.end, status, reason, msg, edit)
	}
	rt.emitted = len(rt.spans)
}

// openPersist reports the stages so far and the start of persist before the
// etcd write, so that no watcher of the new object (the scheduler, a kubelet)
// can report a later stage before this request's stages are out.
func (s *Server) openPersist(rt *requestTrace, r *http.Request, obj runtime.Object, start time.Time) {
	s.finish(rt, r, obj)
	ref, ok := s.traceRef(rt, r, obj)
	if !ok {
		return
	}
	s.cfg.Tracer.Emit(stages.Event{Time: start, Kind: ref.Kind, Namespace: ref.Namespace, Pod: ref.Name, UID: ref.UID,
		Stage: stages.Persist, Status: stages.Started, Component: "kube-apiserver", Attempt: 1,
		User: rt.userName(), UserAgent: rt.agent, Verb: rt.info.verb})
	rt.persistOpen = true
}

func (rt *requestTrace) userName() string {
	if rt.user == nil {
		return ""
	}
	return rt.user.Name
}

// traceRef names the object a traced write is about; ok is false for
// requests whose stages are not reported.
func (s *Server) traceRef(rt *requestTrace, r *http.Request, obj runtime.Object) (trace.Ref, bool) {
	info := rt.info
	// Subresource writes are the components' status and binding traffic;
	// scale is a user's change of the spec (kubectl scale), so it is shown.
	if s.cfg.Tracer == nil || !writeVerbs[info.verb] || (info.subresource != "" && info.subresource != "scale") {
		return trace.Ref{}, false
	}
	res := s.resourceFor(info.apiGroup, info.apiVersion, info.resource)
	if res == nil || !res.Traced {
		return trace.Ref{}, false
	}
	ref := trace.Ref{Kind: res.Kind, Namespace: info.namespace, Name: info.name}
	if obj != nil {
		if m, err := meta.Accessor(obj); err == nil {
			ref.Name, ref.UID = m.GetName(), string(m.GetUID())
			if m.GetNamespace() != "" {
				ref.Namespace = m.GetNamespace()
			}
		}
	} else if ref.Name == "" {
		ref.Name = nameFromBody(r, res)
	}
	return ref, ref.Name != ""
}

// nameFromBody finds the name (or generateName) in a create request's body,
// so a refused create can still be shown in the object's lane.
func nameFromBody(r *http.Request, res *Resource) string {
	if r.Body == nil {
		return ""
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return ""
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	f, err := decoderFor(r)
	if err != nil {
		return ""
	}
	gvk := res.GVK()
	obj, _, err := f.info.Serializer.Decode(data, &gvk, res.New())
	if err != nil {
		return ""
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	if m.GetName() != "" {
		return m.GetName()
	}
	return m.GetGenerateName()
}
