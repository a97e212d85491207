package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// maxBody bounds what is kept of a refused write's body and response.
const maxBody = 1 << 20

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true}

// writeMethods are the HTTP methods of writes: every other request (reads,
// lists, watches: most of the API server's traffic) passes through without
// its request info being parsed a second time.
var writeMethods = map[string]bool{http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true, http.MethodDelete: true}

// record is one traced write as its API stages see it. It travels in the
// request's context from the outermost handler to the storage call; the
// handler chain may run the inner handler in another goroutine (the request
// timeout filter), so it is guarded by mu.
type record struct {
	mu    sync.Mutex
	h     *Hooks
	verb  string
	sub   string // "" or "scale"
	ref   trace.Ref
	body  []byte
	agent string
	start time.Time

	user       string
	groups     []string
	controller string // the kube-controller-manager controller making a create

	spans     []span // authn, authz, admission, in order
	persisted bool   // persist's start was reported (the write reached storage)
	flushed   bool   // the spans so far were reported
	fault     *stages.Fault
}

type span struct {
	stage      stages.ID
	start, end time.Time
	failed     bool
}

type ctxKey struct{}

func recordFrom(ctx context.Context) *record {
	r, _ := ctx.Value(ctxKey{}).(*record)
	return r
}

// recordRequests is the outermost handler: it gives every write of a traced
// resource a record and reports what the request did once it is answered.
func (h *Hooks) recordRequests(next http.Handler, resolver request.RequestInfoResolver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !writeMethods[r.Method] {
			next.ServeHTTP(w, r)
			return
		}
		info, err := resolver.NewRequestInfo(r)
		if err != nil || !info.IsResourceRequest || !writeVerbs[info.Verb] || (info.Subresource != "" && info.Subresource != "scale") {
			next.ServeHTTP(w, r)
			return
		}
		kind, ok := traced[schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}]
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		rec := &record{h: h, verb: info.Verb, sub: info.Subresource, agent: r.UserAgent(), start: h.tr.Clock().Now(),
			ref: trace.Ref{Kind: kind, Namespace: info.Namespace, Name: info.Name}}
		if rec.ref.Name == "" && r.Body != nil {
			// Kept to name a create that is refused before it is decoded.
			rec.body, _ = io.ReadAll(io.LimitReader(r.Body, maxBody))
			r.Body = io.NopCloser(bytes.NewReader(rec.body))
			if h.tr.Armed() {
				rec.ref.Name = nameFromBody(rec.body)
			}
		}
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), ctxKey{}, rec)))
		rec.finish(sw.code, sw.body.Bytes())
	})
}

// statusWriter keeps the response code and, for errors, the Status body.
type statusWriter struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code >= http.StatusBadRequest && s.body.Len() < maxBody {
		s.body.Write(b)
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController and apiserver's wrappers reach the
// underlying writer (Flush, Hijack).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush passes flushes on.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// begin notes the start of an API stage; end closes it.
func (r *record) begin(stage stages.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, span{stage: stage, start: r.h.tr.Clock().Now()})
}

func (r *record) end(stage stages.ID, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.spans) - 1; i >= 0; i-- {
		if r.spans[i].stage == stage && r.spans[i].end.IsZero() {
			r.spans[i].end, r.spans[i].failed = r.h.tr.Clock().Now(), failed
			return
		}
	}
}

func (r *record) has(stage stages.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.spans {
		if s.stage == stage {
			return true
		}
	}
	return false
}

func (r *record) edit(e *stages.Event) { e.User, e.UserAgent, e.Verb = r.user, r.agent, r.verb }

// openPersist reports the stages so far and the start of persist, right
// before the write reaches etcd: no watcher of the object (a controller, the
// scheduler, a kubelet) can report a later stage before these.
func (r *record) openPersist(name, uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name != "" {
		r.ref.Name = name
	}
	if uid != "" {
		r.ref.UID = uid
	}
	if r.flushed {
		return
	}
	r.flushLocked(0, nil)
	r.persisted = true
	e := stages.Event{Time: r.h.tr.Clock().Now(), Kind: r.ref.Kind, Namespace: r.ref.Namespace, Pod: r.ref.Name,
		UID: r.ref.UID, Stage: stages.Persist, Status: stages.Started, Component: Component, Attempt: 1}
	r.edit(&e)
	r.h.tr.Emit(e)
}

// flushLocked reports the recorded spans. A refused request (code ≥ 400)
// ends its last span, or admission when none was open, with kube-apiserver's
// reason and message.
func (r *record) flushLocked(code int, body []byte) {
	r.flushed = true
	if r.controller != "" && r.verb == "create" {
		r.h.tr.Emit(r.reconcileEvent(stages.Started, r.start, "", ""))
	}
	var reason, message string
	if code >= http.StatusBadRequest {
		reason, message = statusOf(code, body)
		if n := len(r.spans); n == 0 || !r.spans[n-1].failed {
			// Refused after the last stage that reported: validation or
			// admission (a 422 Invalid, a webhook), the write's own checks.
			now := r.h.tr.Clock().Now()
			start := now
			if n > 0 {
				start = r.spans[n-1].end
			}
			if n == 0 || r.spans[n-1].stage != stages.Admission {
				r.spans = append(r.spans, span{stage: stages.Admission, start: start, end: now, failed: true})
			} else {
				r.spans[n-1].failed = true
			}
		}
	}
	for _, s := range r.spans {
		if s.end.IsZero() {
			s.end = r.h.tr.Clock().Now()
		}
		status, rs, msg := stages.Succeeded, "", ""
		if s.failed {
			status, rs, msg = stages.Failed, reason, message
		}
		r.h.tr.Record(r.ref, s.stage, Component, s.start, s.end, status, rs, msg, r.edit)
	}
	if r.controller == "" || r.verb != "create" {
		return
	}
	if code < http.StatusBadRequest {
		// Only a controller that was refused before has failures to forget:
		// the common create decodes nothing more.
		if r.h.backoff.refusedBefore(r.controller) {
			r.h.backoff.created(r.controller, ownerFromBody(r.body, r.ref.Namespace))
		}
		return
	}
	owner := ownerFromBody(r.body, r.ref.Namespace)
	e := r.reconcileEvent(stages.Retrying, time.Time{}, "FailedCreate", "Error creating: "+message)
	if owner != "" {
		next := r.h.backoff.refused(r.controller, owner, e.Time)
		e.NextTry = &next
	}
	r.h.tr.Emit(e)
}

// finish runs once the response is written.
func (r *record) finish(code int, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flushed {
		return
	}
	if r.ref.Name == "" {
		r.ref.Name = nameFromBody(r.body)
	}
	if r.ref.Name == "" {
		return
	}
	r.flushLocked(code, body)
}

// reconcileEvent is an event of the reconcile stage of an object a
// controller creates.
func (r *record) reconcileEvent(status stages.Status, at time.Time, reason, message string) stages.Event {
	if at.IsZero() {
		at = r.h.tr.Clock().Now()
	}
	e := stages.Event{Time: at, Kind: r.ref.Kind, Namespace: r.ref.Namespace, Pod: r.ref.Name, UID: r.ref.UID,
		Stage: stages.Reconcile, Status: status, Component: r.controller, Attempt: 1, Reason: reason, Message: message}
	if status != stages.Started {
		e.DurationMs = float64(at.Sub(r.start).Microseconds()) / 1000
	}
	r.edit(&e)
	return e
}

var statusCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
}()

// statusOf reads kube-apiserver's Status answer (JSON or protobuf).
func statusOf(code int, body []byte) (reason, message string) {
	st := &metav1.Status{}
	if _, _, err := statusCodecs.UniversalDeserializer().Decode(body, nil, st); err == nil && st.Message != "" {
		return string(st.Reason), st.Message
	}
	return http.StatusText(code), http.StatusText(code)
}
