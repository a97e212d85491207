package spans

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/podtrace/podtrace/stages"
)

// Span is what the fold reads of one received span.
type Span struct {
	Trace, ID, Parent string
	Name              string
	// Service and Host are the resource's service.name and host.name
	// (kube-apiserver says "apiserver"; a kubelet's host is its node).
	Service, Host string
	Client, Error bool // a client span; status Error
	Start, End    time.Time
	Attrs         map[string]string // string and integer attributes
}

// Hold is how long a trace is held after its root span arrives before it is
// folded: longer than the OpenTelemetry SDKs' 5 s batch delay, so that the
// authentication span of a request, a trace of its own that ends after the
// request's, has arrived too.
const Hold = 6 * time.Second

// The span names the fold reads, as Kubernetes 1.36 and containerd 2.x name them.
const (
	createPodSpan = "POST /api/v1/namespaces/{:namespace}/pods"
	bindingSuffix = "/pods/{:name}/binding"
	authnSpan     = "authentication" // a root of its own: the filter runs before the request's trace begins
	authzSpan     = "authorization"
	createSpan    = "Create"
	etcdSpan      = "Create etcd3"
	syncPodSpan   = "syncPod"
)

// criStages maps a CRI method (the end of a gRPC span's name,
// runtime.v1.RuntimeService/RunPodSandbox) to its stage.
var criStages = map[string]stages.ID{
	"RunPodSandbox":   stages.Sandbox,
	"PullImage":       stages.Pull,
	"CreateContainer": stages.Create,
	"StartContainer":  stages.Start,
}

// Folder holds received spans per trace and folds each trace, once it is
// complete, into stage events: a pod's create request gives authn (the
// authentication filter's start to the next filter's), authz (the
// authorization filter's start to the handler's), admission (the handler's
// start to the etcd write's) and persist (the etcd write); the binding
// request gives bind, and the gap since the pod's write schedule; the
// kubelet's first syncPod gives kubelet (to the first CRI call) and the
// CRI calls in its trace sandbox, pull, create and start. Ready is not in
// any span: the pod watch and Events give it, and every stage the spans
// miss.
type Folder struct {
	emit stages.Emitter
	hold time.Duration

	mu        sync.Mutex
	traces    map[string]*held
	authn     []Span               // recent authentication spans, oldest first
	waiting   []pendingAuthn       // requests whose authentication span has not come yet
	persisted map[string]time.Time // a pod's write's end, until its binding
}

// held is one trace's spans so far.
type held struct {
	spans  []Span
	rootAt time.Time // when its root span arrived; zero before
	last   time.Time // when its last span arrived
}

// Abandon is how long a trace whose root never arrives (a client that
// propagates its context but exports nothing here) waits after its last
// span before it is folded as it is.
const Abandon = time.Minute

// pendingAuthn is a folded create request still to be matched to its
// authentication span.
type pendingAuthn struct {
	ev         stages.Event
	req, first Span
	since      time.Time
}

// maxAuthn bounds the authentication spans kept for matching to requests.
const maxAuthn = 4096

// NewFolder returns a folder sending to emit, folding a trace hold after
// its root span arrived.
func NewFolder(emit stages.Emitter, hold time.Duration) *Folder {
	return &Folder{emit: emit, hold: hold, traces: map[string]*held{}, persisted: map[string]time.Time{}}
}

// Add takes received spans.
func (f *Folder) Add(spans ...Span) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for _, s := range spans {
		if s.Name == authnSpan && s.Parent == "" { // the request's parent, or a trace of its own
			f.authn = append(f.authn, s)
			if len(f.authn) > maxAuthn {
				f.authn = slices.Delete(f.authn, 0, len(f.authn)-maxAuthn)
			}
		}
		h := f.traces[s.Trace]
		if h == nil {
			h = &held{}
			f.traces[s.Trace] = h
		}
		h.spans = append(h.spans, s)
		h.last = now
		if s.Parent == "" && h.rootAt.IsZero() {
			h.rootAt = now
		}
	}
}

// Run folds the traces that are due, every second, until ctx ends.
func (f *Folder) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			f.foldDue(now.Add(-f.hold), now.Add(-Abandon))
			f.matchWaiting(now.Add(-Abandon))
		}
	}
}

// Flush folds every trace held.
func (f *Folder) Flush() {
	now := time.Now()
	f.foldDue(now.Add(time.Hour), now.Add(time.Hour))
	f.matchWaiting(now.Add(-Abandon))
}

// foldDue folds the traces whose root arrived before cutoff, and those
// without a root whose last span arrived before abandon.
func (f *Folder) foldDue(cutoff, abandon time.Time) {
	f.mu.Lock()
	var due [][]Span
	for id, h := range f.traces {
		if !h.rootAt.IsZero() && h.rootAt.Before(cutoff) || h.rootAt.IsZero() && h.last.Before(abandon) {
			due = append(due, h.spans)
			delete(f.traces, id)
		}
	}
	f.mu.Unlock()
	slices.SortFunc(due, func(a, b []Span) int { return earliest(a).Compare(earliest(b)) })
	for _, spans := range due {
		f.fold(spans)
	}
}

// matchWaiting emits the authn stage of the requests whose authentication
// span has come since they were folded, and gives up on those waiting
// since before abandon.
func (f *Folder) matchWaiting(abandon time.Time) {
	f.mu.Lock()
	waiting := f.waiting
	f.waiting = nil
	f.mu.Unlock()
	var still []pendingAuthn
	for _, w := range waiting {
		if a, ok := f.authnFor(w.req, w.first); ok {
			f.stage(w.ev, stages.Authn, a.Start, w.first.Start, false)
		} else if w.since.After(abandon) {
			still = append(still, w)
		}
	}
	f.mu.Lock()
	f.waiting = append(f.waiting, still...)
	f.mu.Unlock()
}

// fold turns one trace into stage events. A request's server span need
// not be its trace's root: a client that traces (the kubelet, client-go
// with a tracer provider) sends its own span as the parent.
func (f *Folder) fold(spans []Span) {
	slices.SortStableFunc(spans, func(a, b Span) int { return a.Start.Compare(b.Start) })
	for _, s := range spans {
		switch {
		case s.Name == createPodSpan:
			f.foldCreate(s, subtree(s, spans))
		case strings.HasSuffix(s.Name, bindingSuffix):
			f.foldBind(s)
		case s.Name == syncPodSpan && s.Attrs["k8s.pod.update_type"] == "create":
			f.foldSync(s, subtree(s, spans))
		}
	}
}

// subtree is root and the spans below it, in start order.
func subtree(root Span, spans []Span) []Span {
	in := map[string]bool{root.ID: true}
	out := []Span{root}
	for changed := true; changed; {
		changed = false
		for _, s := range spans {
			if !in[s.ID] && in[s.Parent] {
				in[s.ID], changed = true, true
				out = append(out, s)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Span) int { return a.Start.Compare(b.Start) })
	return out
}

// foldCreate folds a pod's create request.
func (f *Folder) foldCreate(root Span, spans []Span) {
	etcd, ok := find(spans, func(s Span) bool { return s.Name == etcdSpan && s.Attrs["resource"] == "pods" })
	if !ok {
		return // refused before the write: Events say why
	}
	ns, name, ok := podFromKey(etcd.Attrs["key"])
	if !ok {
		return
	}
	ev := stages.Event{Kind: stages.KindPod, Namespace: ns, Pod: name, Component: "kube-apiserver", Verb: "create",
		UserAgent: root.Attrs["user_agent.original"]}
	create, hasCreate := find(spans, func(s Span) bool { return s.Name == createSpan })
	if first, ok := firstChild(root, spans); ok {
		if a, ok := f.authnFor(root, first); ok {
			f.stage(ev, stages.Authn, a.Start, first.Start, false)
		} else {
			f.mu.Lock()
			f.waiting = append(f.waiting, pendingAuthn{ev: ev, req: root, first: first, since: time.Now()})
			f.mu.Unlock()
		}
	}
	if authz, ok := find(spans, func(s Span) bool { return s.Name == authzSpan }); ok && hasCreate {
		f.stage(ev, stages.Authz, authz.Start, create.Start, false)
	}
	if hasCreate {
		f.stage(ev, stages.Admission, create.Start, etcd.Start, false)
	}
	f.stage(ev, stages.Persist, etcd.Start, etcd.End, etcd.Error)
	f.mu.Lock()
	f.persisted[ns+"/"+name] = etcd.End
	f.mu.Unlock()
}

// foldBind folds a pod's binding request, and the scheduling before it.
func (f *Folder) foldBind(root Span) {
	path := root.Attrs["url.path"]
	if path == "" {
		path = root.Attrs["http.target"]
	}
	ns, name, ok := podFromBinding(path)
	if !ok {
		return
	}
	key := ns + "/" + name
	ev := stages.Event{Kind: stages.KindPod, Namespace: ns, Pod: name, Component: "kube-scheduler",
		UserAgent: root.Attrs["user_agent.original"]}
	f.mu.Lock()
	written, seen := f.persisted[key]
	delete(f.persisted, key)
	f.mu.Unlock()
	if seen && written.Before(root.Start) {
		f.stage(ev, stages.Schedule, written, root.Start, false)
	}
	code, _ := strconv.Atoi(root.Attrs["http.response.status_code"])
	f.stage(ev, stages.Bind, root.Start, root.End, root.Error || code >= 400)
}

// foldSync folds the kubelet's first sync of a pod and the CRI calls in its trace.
func (f *Folder) foldSync(sp Span, spans []Span) {
	ev := stages.Event{Kind: stages.KindPod, Namespace: sp.Attrs["k8s.namespace.name"], Pod: sp.Attrs["k8s.pod.name"],
		UID: sp.Attrs["k8s.pod.uid"], Node: sp.Host, Component: "kubelet"}
	if ev.Pod == "" {
		return
	}
	byID := map[string]Span{}
	for _, s := range spans {
		byID[s.ID] = s
	}
	attempts := map[stages.ID]int{}
	kubeletEnded := false
	for _, s := range spans {
		stage, ok := criStage(s.Name)
		if !ok || byID[s.Parent].Name == s.Name { // containerd's server span inside the kubelet's client span
			continue
		}
		if !kubeletEnded {
			f.stage(ev, stages.Kubelet, sp.Start, s.Start, false)
			kubeletEnded = true
		}
		attempts[stage]++
		e := ev
		e.Attempt = attempts[stage]
		f.stage(e, stage, s.Start, s.End, s.Error)
	}
}

// stage emits a stage's started event at start and its end at end.
func (f *Folder) stage(base stages.Event, stage stages.ID, start, end time.Time, failed bool) {
	if end.Before(start) {
		end = start
	}
	e := base
	e.Stage, e.Time, e.Status, e.Source = stage, start, stages.Started, stages.SourceSpans
	e.Attempt = max(e.Attempt, 1)
	f.emit.Emit(e)
	e.Time, e.Status = end, stages.Succeeded
	if failed {
		e.Status = stages.Failed
	}
	e.DurationMs = float64(end.Sub(start).Microseconds()) / 1000
	f.emit.Emit(e)
}

// authnFor finds the authentication span of a request: it began at most
// a millisecond before the request's own trace, no later than the first
// filter after it, and lasted past it; the latest such wins.
func (f *Folder) authnFor(root, first Span) (Span, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.authn) - 1; i >= 0; i-- {
		a := f.authn[i]
		if !a.Start.Before(root.Start.Add(-time.Millisecond)) && !a.Start.After(first.Start) && !a.End.Before(first.End) {
			f.authn = slices.Delete(f.authn, i, i+1)
			return a, true
		}
	}
	return Span{}, false
}

// firstChild is the earliest span whose parent is root.
func firstChild(root Span, spans []Span) (Span, bool) {
	return find(spans, func(s Span) bool { return s.Parent == root.ID })
}

// find returns the earliest span (spans are sorted by start) that matches.
func find(spans []Span, match func(Span) bool) (Span, bool) {
	for _, s := range spans {
		if match(s) {
			return s, true
		}
	}
	return Span{}, false
}

// criStage is the stage of a CRI call's span, by its method.
func criStage(name string) (stages.ID, bool) {
	i := strings.LastIndexByte(name, '/')
	id, ok := criStages[name[i+1:]]
	return id, ok && i >= 0
}

// podFromKey reads namespace and name from an etcd key
// (/pods/NAMESPACE/NAME, or under /registry).
func podFromKey(key string) (ns, name string, ok bool) {
	key = strings.TrimPrefix(key, "/registry")
	rest, ok := strings.CutPrefix(key, "/pods/")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, "/")
	return ns, name, ok && ns != "" && name != ""
}

// podFromBinding reads namespace and name from a binding request's path
// (/api/v1/namespaces/NAMESPACE/pods/NAME/binding).
func podFromBinding(path string) (ns, name string, ok bool) {
	p := strings.Split(strings.Trim(path, "/"), "/")
	if len(p) != 7 || p[2] != "namespaces" || p[4] != "pods" || p[6] != "binding" {
		return "", "", false
	}
	return p[3], p[5], true
}

// earliest is the earliest start of spans.
func earliest(spans []Span) time.Time {
	t := spans[0].Start
	for _, s := range spans[1:] {
		if s.Start.Before(t) {
			t = s.Start
		}
	}
	return t
}
