// Package apiserver is podtrace's Kubernetes API server: each request goes
// authn → authz → admission → persist (etcd) → response, following
// kube-apiserver's REST conventions closely enough for kubectl and client-go,
// and reporting those stages as podtrace events.
package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
	"github.com/podtrace/podtrace/engine/apiserver/authz"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// Config is what the server needs.
type Config struct {
	// Etcd is the storage.
	Etcd *clientv3.Client
	// Address to listen on; default 127.0.0.1:0 (a free loopback port).
	Address string
	// TLS is the serving configuration (certificate, client CAs).
	TLS *tls.Config
	// Authenticator finds who is asking; it falls back to anonymous itself.
	Authenticator authn.Authenticator
	// Authorizer decides whether they may.
	Authorizer authz.Authorizer
	// Admit runs the admission chain on a write; nil admits everything.
	Admit func(ctx context.Context, a *AdmissionRequest) error
	// Default applies the API's defaults to a decoded object.
	Default func(obj runtime.Object)
	// Validate checks an object (old is nil on create).
	Validate func(obj, old runtime.Object) field.ErrorList
	// Clock stamps creation and deletion timestamps; default real time.
	Clock clock.Clock
	// Tracer receives the API stages of traced resources.
	Tracer *trace.Tracer
	// Bootstrap objects are created at start when missing (namespaces, RBAC policy).
	Bootstrap []runtime.Object
	// PodLogs serves pods/log; nil answers that logs are unavailable.
	PodLogs PodLogFunc
	// PodExec reaches a node's runtime for pods/exec; nil answers as a
	// runtime without Exec does.
	PodExec PodExecFunc
	// PodPortForward reaches a node's runtime for pods/portforward; nil
	// answers as a runtime without PortForward does.
	PodPortForward PodPortForwardFunc
	// PodAttach reaches a node's runtime for pods/attach; nil answers as a
	// runtime without Attach does.
	PodAttach PodAttachFunc
	// Released is told when an admitted object is no longer, or never got,
	// into etcd: deleted, or its write failed (ResourceQuota gives its usage back).
	Released func(ctx context.Context, res *Resource, obj runtime.Object)
}

// AdmissionRequest is one write handed to admission.
type AdmissionRequest struct {
	Operation   string // CREATE, UPDATE, DELETE
	Resource    *Resource
	Subresource string
	Namespace   string
	Name        string
	Object      runtime.Object
	OldObject   runtime.Object
	User        *authn.User
	// Plugin is set by the admission chain to the plugin that rejected the request.
	Plugin string
}

// PodLogFunc streams a container's log to w (following when follow is set).
type PodLogFunc func(ctx context.Context, namespace, pod, container string, follow bool, tail int64, w func([]byte) error) error

// Server is a running API server.
type Server struct {
	cfg       Config
	resources map[string]*Resource // "group/resource"
	ordered   []*Resource
	stores    map[*Resource]*store
	cachers   map[*Resource]*cacher
	listener  net.Listener
	http      *http.Server
	url       string
}

// New builds a server; Start makes it listen.
func New(cfg Config) (*Server, error) {
	if cfg.Etcd == nil || cfg.Authenticator == nil || cfg.Authorizer == nil {
		return nil, errors.New("apiserver: Etcd, Authenticator and Authorizer are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:0"
	}
	s := &Server{cfg: cfg, resources: map[string]*Resource{}, stores: map[*Resource]*store{}, cachers: map[*Resource]*cacher{}}
	for _, r := range Resources() {
		s.ordered = append(s.ordered, r)
		s.resources[r.GVR.Group+"/"+r.GVR.Resource] = r
		s.stores[r] = newStore(r, cfg.Etcd)
		s.cachers[r] = newCacher(r, s.stores[r])
		s.stores[r].applied = s.cachers[r].waitApplied
	}
	return s, nil
}

// Start fills the watch caches, creates the bootstrap objects, and serves
// until ctx ends. It returns once the server accepts requests.
func (s *Server) Start(ctx context.Context) error {
	for _, c := range s.cachers {
		go c.run(ctx)
	}
	for _, c := range s.cachers {
		select {
		case <-c.ready:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return fmt.Errorf("start apiserver: watch cache for %s not ready", c.res.GVR.Resource)
		}
	}
	if err := s.bootstrap(ctx); err != nil {
		return fmt.Errorf("start apiserver: %w", err)
	}
	// Serve nothing until the caches hold everything written so far, so the
	// first requests are authorized against the bootstrap RBAC policy.
	head, err := s.cfg.Etcd.Get(ctx, "/registry/health")
	if err != nil {
		return fmt.Errorf("start apiserver: %w", etcdError(err))
	}
	for _, c := range s.cachers {
		if err := c.waitFresh(ctx, head.Header.Revision); err != nil {
			return fmt.Errorf("start apiserver: watch cache for %s: %w", c.res.GVR.Resource, err)
		}
	}
	l, err := net.Listen("tcp", s.cfg.Address)
	if err != nil {
		return fmt.Errorf("start apiserver: %w", err)
	}
	s.listener = l
	s.url = "https://" + l.Addr().String()
	s.http = &http.Server{Handler: s, TLSConfig: s.cfg.TLS, ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: discardLogger()}
	go func() {
		if s.cfg.TLS != nil {
			s.http.ServeTLS(l, "", "")
		} else {
			s.http.Serve(l)
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.http.Shutdown(shutdown)
	}()
	return nil
}

// URL returns the server's base URL (https://127.0.0.1:PORT).
func (s *Server) URL() string { return s.url }

// bootstrap creates the objects every cluster starts with, if missing.
func (s *Server) bootstrap(ctx context.Context) error {
	for _, obj := range s.cfg.Bootstrap {
		res := s.resourceForObject(obj)
		if res == nil {
			return fmt.Errorf("bootstrap: no resource serves %T", obj)
		}
		obj = obj.DeepCopyObject()
		ns, name := objectNamespaceName(obj)
		if _, err := s.stores[res].get(ctx, ns, name); err == nil {
			continue
		}
		s.prepareCreate(res, obj)
		if s.cfg.Default != nil {
			s.cfg.Default(obj)
		}
		if _, err := s.stores[res].create(ctx, ns, name, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("bootstrap %s %s: %w", res.Kind, name, err)
		}
	}
	return nil
}

// ServeHTTP runs a request through authn, authz and the handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt := newRequestTrace(s.cfg.Clock, r)
	info := parseRequestInfo(r)
	rt.info = info

	authnSpan := rt.begin()
	user, ok, err := s.cfg.Authenticator.AuthenticateRequest(r)
	if ferr := s.gate(r.Context(), r, rt, stages.Authn, nil); ferr != nil {
		ok, err = false, ferr
	}
	if err != nil || !ok {
		status := authn.Unauthorized()
		rt.end(authnSpan, stages.Authn, status)
		s.finish(rt, r, nil)
		writeError(w, nil, status)
		return
	}
	rt.user = user
	rt.end(authnSpan, stages.Authn, nil)

	authzSpan := rt.begin()
	attrs := info.attributes(*user, info.verb)
	if !info.resourceRequest {
		attrs.Verb = strings.ToLower(r.Method)
	}
	decision, reason, err := s.cfg.Authorizer.Authorize(r.Context(), attrs)
	if ferr := s.gate(r.Context(), r, rt, stages.Authz, &attrs); ferr != nil {
		decision, reason = authz.DecisionDeny, ""
	}
	if decision != authz.DecisionAllow {
		if err != nil && reason == "" {
			reason = err.Error()
		}
		status := authz.Forbidden(attrs, reason)
		rt.end(authzSpan, stages.Authz, status)
		s.finish(rt, r, nil)
		writeError(w, nil, status)
		return
	}
	rt.end(authzSpan, stages.Authz, nil)

	if !info.resourceRequest {
		s.serveNonResource(w, r)
		return
	}
	s.serveResource(w, r.WithContext(authn.WithUser(r.Context(), user)), rt)
}

// resourceFor finds the resource a request names, or nil.
func (s *Server) resourceFor(group, version, resource string) *Resource {
	r := s.resources[group+"/"+resource]
	if r == nil || r.GVR.Version != version {
		return nil
	}
	return r
}

func (s *Server) resourceForObject(obj runtime.Object) *Resource {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return nil
	}
	for _, r := range s.ordered {
		if r.GVK() == gvks[0] {
			return r
		}
	}
	return nil
}

// hint returns a function giving the cached object, the first guess of an update.
func (s *Server) hint(res *Resource, ns, name string) func() runtime.Object {
	return func() runtime.Object { return s.cachers[res].get(ns, name) }
}
