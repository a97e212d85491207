package apiserver

import (
	"bytes"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	info := rt.info
	// Subresource writes are the components' status and binding traffic;
	// scale is a user's change of the spec (kubectl scale), so it is shown.
	if s.cfg.Tracer == nil || !writeVerbs[info.verb] || (info.subresource != "" && info.subresource != "scale") {
		return
	}
	res := s.resourceFor(info.apiGroup, info.apiVersion, info.resource)
	if res == nil || !res.Traced {
		return
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
	if ref.Name == "" {
		return
	}
	user := ""
	if rt.user != nil {
		user = rt.user.Name
	}
	for _, sp := range rt.spans {
		status, reason, msg := stages.Succeeded, "", ""
		if sp.err != nil {
			st := apiStatus(sp.err)
			status, reason, msg = stages.Failed, string(st.Reason), st.Message
			if sp.plugin != "" {
				msg = sp.plugin + ": " + msg
			}
		}
		s.cfg.Tracer.Record(ref, sp.stage, "kube-apiserver", sp.start, sp.end, status, reason, msg,
			func(e *stages.Event) { e.User, e.UserAgent, e.Verb = user, rt.agent, info.verb })
	}
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

// isAPIError reports whether err is already a Kubernetes API error.
func isAPIError(err error) bool {
	_, ok := err.(apierrors.APIStatus)
	return ok
}
