package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	cachertesting "k8s.io/apiserver/pkg/storage/cacher/testing"
	"k8s.io/utils/clock"

	"k8s.io/kubernetes/pkg/api/legacyscheme"
	core "k8s.io/kubernetes/pkg/apis/core"
	podregistry "k8s.io/kubernetes/pkg/registry/core/pod"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// events collects what a tracer emits.
type events struct {
	mu  sync.Mutex
	evs []stages.Event
}

func (e *events) Emit(ev stages.Event) { e.mu.Lock(); e.evs = append(e.evs, ev); e.mu.Unlock() }

// all returns a copy of what was emitted so far.
func (e *events) all() []stages.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]stages.Event(nil), e.evs...)
}

// ended returns the terminal events of obj's stages, in the order emitted.
func (e *events) ended(obj string) []stages.Event {
	var out []stages.Event
	for _, ev := range e.all() {
		if ev.Pod == obj && ev.Status.Terminal() {
			out = append(out, ev)
		}
	}
	return out
}

// stagesOf returns the stages of evs, in order.
func stagesOf(evs []stages.Event) []stages.ID {
	ids := make([]stages.ID, len(evs))
	for i, ev := range evs {
		ids[i] = ev.Stage
	}
	return ids
}

// memStore is the etcd behind the storage seam, for pods. Upstream has no
// in-memory storage.Interface that stores: its cacher's MockStorage
// (embedded here for the rest of the interface) answers Create, Delete and
// GuaranteedUpdate with "unimplemented", so those three, the writes the
// seam wraps, are written here.
type memStore struct {
	cachertesting.MockStorage
	mu   sync.Mutex
	objs map[string]*core.Pod
}

// Create implements storage.Interface: etcd's "already exists" for a taken
// key, else the object is stored at resource version 1 and copied to out.
func (m *memStore) Create(_ context.Context, key string, obj, out runtime.Object, _ uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[key]; ok {
		return storage.NewKeyExistsError(key, 0)
	}
	pod := obj.(*core.Pod).DeepCopy()
	pod.ResourceVersion = "1"
	m.objs[key] = pod
	*out.(*core.Pod) = *pod.DeepCopy()
	return nil
}

// GuaranteedUpdate implements storage.Interface: one try of tryUpdate on
// the stored pod, stored and copied to dest.
func (m *memStore) GuaranteedUpdate(_ context.Context, key string, dest runtime.Object, _ bool,
	_ *storage.Preconditions, tryUpdate storage.UpdateFunc, _ runtime.Object) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.objs[key]
	if !ok {
		return storage.NewKeyNotFoundError(key, 0)
	}
	out, _, err := tryUpdate(cur.DeepCopy(), storage.ResponseMeta{ResourceVersion: 1})
	if err != nil {
		return err
	}
	m.objs[key] = out.(*core.Pod).DeepCopy()
	*dest.(*core.Pod) = *out.(*core.Pod).DeepCopy()
	return nil
}

// Delete implements storage.Interface: the stored pod is removed and
// copied to out.
func (m *memStore) Delete(_ context.Context, key string, out runtime.Object, _ *storage.Preconditions,
	_ storage.ValidateObjectFunc, _ runtime.Object, _ storage.DeleteOptions) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.objs[key]
	if !ok {
		return storage.NewKeyNotFoundError(key, 0)
	}
	delete(m.objs, key)
	*out.(*core.Pod) = *cur
	return nil
}

// stored returns how many objects are stored.
func (m *memStore) stored() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.objs)
}

// server is kube-apiserver's path of a pod create, from upstream's own
// pieces, with podtrace's seams where Install puts them: the request
// record outermost, then the filters (request info, authentication,
// authorization), then what the pods registry does with a create
// (mutating admission, the pod strategy's checks, validating admission,
// the write to storage).
type server struct {
	tr    *trace.Tracer
	out   *events
	store *memStore
	http.Handler
}

// newServer authenticates a bearer token as the user it names (no token
// is a 401) and lets its authorizer allow everything, as RBAC does for a
// cluster admin.
func newServer(t *testing.T) *server {
	t.Helper()
	out := &events{}
	tr := trace.New(clock.RealClock{}, out)
	h := New(tr)
	plugin, err := newPlugin(h)(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{tr: tr, out: out, store: &memStore{objs: map[string]*core.Pod{}}}
	authn := bearertoken.New(authenticator.TokenFunc(func(_ context.Context, token string) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: token, Groups: []string{user.AllAuthenticated}}}, true, nil
	}))
	allow := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	})
	adm := &admissionHook{inner: admission.NewChainHandler(plugin), h: h}
	pods := &storageHook{Interface: s.store, h: h, kind: stages.KindPod, gr: schema.GroupResource{Resource: "pods"}}

	resolver := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	codecs := legacyscheme.Codecs
	var handler http.Handler = createPods(adm, pods)
	handler = genericapifilters.WithAuthorization(handler, &authorizerHook{inner: allow, h: h}, codecs)
	handler = genericapifilters.WithAuthentication(handler, &authenticatorHook{inner: authn, h: h},
		genericapifilters.Unauthorized(codecs), nil, nil)
	handler = genericapifilters.WithRequestInfo(handler, resolver)
	s.Handler = h.recordRequests(handler, resolver)
	return s
}

// createPods does what the pods registry's create does once the filters
// let a request through: decode, mutating admission, the pod strategy's
// defaults and validation (rest.BeforeCreate, a 422 when invalid),
// validating admission, the write, and Kubernetes' Status on any error.
// Any other request is a 200 with nothing done.
func createPods(adm admission.Interface, pods storage.Interface) http.Handler {
	codecs := legacyscheme.Codecs
	gv := schema.GroupVersion{Version: "v1"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := request.RequestInfoFrom(r.Context())
		if info.Verb != "create" || info.Resource != "pods" || info.Subresource != "" {
			w.WriteHeader(http.StatusOK)
			return
		}
		ctx := request.WithNamespace(r.Context(), info.Namespace)
		u, _ := request.UserFrom(ctx)
		err := func() error {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return err
			}
			obj, _, err := codecs.UniversalDecoder().Decode(body, nil, nil)
			if err != nil {
				return err
			}
			pod := obj.(*core.Pod)
			o := admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme)
			attrs := func() admission.Attributes {
				return admission.NewAttributesRecord(pod, nil, gv.WithKind("Pod"), info.Namespace, pod.Name,
					gv.WithResource("pods"), "", admission.Create, nil, false, u)
			}
			if err := adm.(admission.MutationInterface).Admit(ctx, attrs(), o); err != nil {
				return err
			}
			rest.FillObjectMetaSystemFields(pod) // as the registry's Store.Create does first
			if err := rest.BeforeCreate(podregistry.Strategy, ctx, pod); err != nil {
				return err
			}
			if err := adm.(admission.ValidationInterface).Validate(ctx, attrs(), o); err != nil {
				return err
			}
			created := &core.Pod{}
			if err := pods.Create(ctx, "/pods/"+pod.Namespace+"/"+pod.Name, pod, created, 0); err != nil {
				return err
			}
			responsewriters.WriteObjectNegotiated(codecs, negotiation.DefaultEndpointRestrictions, gv, w, r,
				http.StatusCreated, created, false)
			return nil
		}()
		if err != nil {
			responsewriters.ErrorNegotiated(err, codecs, gv, w, r)
		}
	})
}

// podJSON is a pod as kubectl sends it.
func podJSON(name string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},` +
		`"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}`
}

// do sends a request as user ("" sends no token) and returns the response's
// code and body (the Status message when it is a Status).
func (s *server) do(t *testing.T, method, path, userName, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "kubectl/v1.36.3")
	if userName != "" {
		req.Header.Set("Authorization", "Bearer "+userName)
	}
	rw := httptest.NewRecorder()
	s.ServeHTTP(rw, req)
	st := &metav1.Status{}
	if err := json.Unmarshal(rw.Body.Bytes(), st); err == nil && st.Kind == "Status" {
		return rw.Code, st.Message
	}
	return rw.Code, rw.Body.String()
}
