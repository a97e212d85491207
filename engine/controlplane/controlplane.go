// Package controlplane assembles podtrace's API side: etcd, PKI, tokens and
// the API server with its authn, authz (RBAC), admission, defaulting and
// validation, and hands out clients for each component's identity.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/apiserver"
	"github.com/podtrace/podtrace/engine/apiserver/admission"
	"github.com/podtrace/podtrace/engine/apiserver/authn"
	"github.com/podtrace/podtrace/engine/apiserver/authz"
	"github.com/podtrace/podtrace/engine/apiserver/bootstrap"
	"github.com/podtrace/podtrace/engine/apiserver/defaults"
	"github.com/podtrace/podtrace/engine/apiserver/pki"
	"github.com/podtrace/podtrace/engine/apiserver/validation"
	"github.com/podtrace/podtrace/engine/etcd"
	"github.com/podtrace/podtrace/engine/trace"
)

// Config says where the control plane keeps its state.
type Config struct {
	// DataDir keeps etcd data, certificates, tokens and the kubeconfig
	// across restarts; empty means a temporary directory removed on Close.
	DataDir string
	// EtcdEndpoints use an external etcd instead of the embedded one.
	EtcdEndpoints []string
	// UnsafeNoFsync turns off etcd's fsync (benchmarks, tests).
	UnsafeNoFsync bool
	// Address is the API server's listen address (default 127.0.0.1:0).
	Address string
	// Clock drives timestamps; Tracer receives API stage events.
	Clock  clock.Clock
	Tracer *trace.Tracer
	// Users get bearer tokens (component identities); they are kept in tokens.csv.
	Users []authn.User
	// PodLogs serves pods/log.
	PodLogs apiserver.PodLogFunc
	// PodExec serves pods/exec.
	PodExec apiserver.PodExecFunc
	// PodPortForward serves pods/portforward.
	PodPortForward apiserver.PodPortForwardFunc
	// PodAttach serves pods/attach.
	PodAttach apiserver.PodAttachFunc
}

// ControlPlane is a running etcd and API server.
type ControlPlane struct {
	Etcd       *etcd.Server
	API        *apiserver.Server
	PKI        *pki.Bundle
	Tokens     *authn.Tokens
	Kubeconfig string // path of the admin kubeconfig
	DataDir    string

	cancel context.CancelFunc
	tmpDir string
	once   sync.Once
	err    error
}

// Start brings up etcd and the API server and writes the kubeconfig.
func Start(ctx context.Context, cfg Config) (*ControlPlane, error) {
	cp := &ControlPlane{DataDir: cfg.DataDir}
	if cp.DataDir == "" {
		dir, err := os.MkdirTemp("", "podtrace-")
		if err != nil {
			return nil, fmt.Errorf("start control plane: %w", err)
		}
		cp.DataDir, cp.tmpDir = dir, dir
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	ctx, cp.cancel = context.WithCancel(ctx)
	if err := cp.start(ctx, cfg); err != nil {
		cp.Close()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) start(ctx context.Context, cfg Config) error {
	var err error
	if err = os.MkdirAll(cp.DataDir, 0o700); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	if cp.PKI, err = pki.Ensure(filepath.Join(cp.DataDir, "pki")); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	if cp.Tokens, err = authn.LoadOrCreateTokenFile(filepath.Join(cp.DataDir, "tokens.csv"), cfg.Users...); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	cp.Etcd, err = etcd.Start(ctx, etcd.Config{DataDir: filepath.Join(cp.DataDir, "etcd"), Endpoints: cfg.EtcdEndpoints,
		LogFile: filepath.Join(cp.DataDir, "etcd.log"), UnsafeNoFsync: cfg.UnsafeNoFsync})
	if err != nil {
		return err
	}
	var chain *admission.Chain
	svcs := newServices(cfg.Clock)
	rbac := authz.Union{authz.PrivilegedGroups("system:masters")}
	api, err := apiserver.New(apiserver.Config{
		Etcd:          cp.Etcd.Client,
		Address:       cfg.Address,
		TLS:           cp.PKI.ServerTLSConfig(),
		Authenticator: authn.New(authn.Config{ClientCAs: cp.PKI.ClientCertPool(), Tokens: cp.Tokens, Anonymous: true}),
		Authorizer: authz.AuthorizerFunc(func(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
			return rbac.Authorize(ctx, a)
		}),
		Admit: func(ctx context.Context, r *apiserver.AdmissionRequest) error {
			return admit(ctx, chain, r)
		},
		Default:        defaults.Default,
		Validate:       svcs.validate,
		Clock:          cfg.Clock,
		Tracer:         cfg.Tracer,
		Bootstrap:      append(bootstrapObjects(), kubernetesService(cfg.Address)),
		PodLogs:        cfg.PodLogs,
		PodExec:        cfg.PodExec,
		PodPortForward: cfg.PodPortForward,
		PodAttach:      cfg.PodAttach,
		Released: func(ctx context.Context, res *apiserver.Resource, obj runtime.Object) {
			_ = chain.ObjectDeleted(ctx, res.GroupResource(), obj) // quota usage given back
			svcs.released(obj)                                     // cluster IP and node ports given back
		},
	})
	if err != nil {
		return err
	}
	rbac = append(rbac, authz.New(api.RBACLister()))
	chain = admission.New(api.Store())
	if err := api.Store().SetBegin("services", svcs.begin); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	if err := api.Start(ctx); err != nil {
		return err
	}
	// Allocations are rebuilt from the stored Services before any client
	// has the kubeconfig, then repaired periodically.
	if err := svcs.repair(ctx, api.Store()); err != nil {
		return fmt.Errorf("start control plane: rebuild service allocations: %w", err)
	}
	go svcs.repairLoop(ctx, api.Store())
	cp.API = api
	cp.Kubeconfig = filepath.Join(cp.DataDir, "kubeconfig")
	if err := cp.PKI.WriteKubeconfig(cp.Kubeconfig, api.URL()); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// admit adapts an API server write to the admission chain, naming the
// plugin that refused it.
func admit(ctx context.Context, chain *admission.Chain, r *apiserver.AdmissionRequest) error {
	a := &admission.Attributes{Operation: admission.Operation(r.Operation), Kind: r.Resource.GVK(),
		Resource: r.Resource.GVR, Subresource: r.Subresource, Namespace: r.Namespace, Name: r.Name,
		Object: r.Object, OldObject: r.OldObject}
	if r.User != nil {
		a.User = admission.User{Name: r.User.Name, Groups: r.User.Groups}
	}
	err := chain.Admit(ctx, a)
	if err != nil {
		r.Plugin = admission.RejectedBy(err)
		var rej *admission.Rejection
		if errors.As(err, &rej) {
			return rej.Err
		}
	}
	return err
}

func validate(obj, old runtime.Object) field.ErrorList {
	if old == nil {
		return validation.ValidateCreate(obj)
	}
	return validation.ValidateUpdate(obj, old)
}

// bootstrapObjects are what kube-apiserver and its post-start hooks create:
// the system namespaces and the bootstrap RBAC policy.
func bootstrapObjects() []runtime.Object {
	var objs []runtime.Object
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease} {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	// The serviceaccount controller's work for the system namespaces, done
	// up front so pods can be admitted from the first request.
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease} {
		objs = append(objs, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}})
	}
	for _, r := range bootstrap.ClusterRoles() {
		objs = append(objs, r)
	}
	for _, b := range bootstrap.ClusterRoleBindings() {
		objs = append(objs, b)
	}
	for _, b := range bootstrap.RoleBindings() {
		objs = append(objs, b)
	}
	return objs
}

// RestConfig returns a client configuration for a user with a bearer token
// (one is generated if the user has none).
func (cp *ControlPlane) RestConfig(user authn.User, userAgent string) (*rest.Config, error) {
	token, ok := cp.Tokens.TokenFor(user.Name)
	if !ok {
		var err error
		if token, err = cp.Tokens.Generate(user); err != nil {
			return nil, err
		}
	}
	return &rest.Config{
		Host:            cp.API.URL(),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.PKI.CAPEM},
		UserAgent:       userAgent,
		QPS:             -1, // no client-side rate limit: the engine's own components
		Timeout:         60 * time.Second,
		ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf",
			AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json"},
	}, nil
}

// Client returns a clientset acting as user.
func (cp *ControlPlane) Client(user authn.User, userAgent string) (kubernetes.Interface, error) {
	cfg, err := cp.RestConfig(user, userAgent)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// AdminConfig returns the admin's client configuration (client certificate).
func (cp *ControlPlane) AdminConfig() *rest.Config {
	return &rest.Config{Host: cp.API.URL(), UserAgent: "podtrace",
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.PKI.CAPEM, CertData: cp.PKI.AdminCertPEM, KeyData: cp.PKI.AdminKeyPEM},
		QPS:             -1, Timeout: 60 * time.Second}
}

// Close stops the API server and etcd and removes a temporary data dir.
func (cp *ControlPlane) Close() error {
	cp.once.Do(func() {
		if cp.cancel != nil {
			cp.cancel()
		}
		if cp.Etcd != nil {
			cp.err = cp.Etcd.Close()
		}
		if cp.tmpDir != "" {
			os.RemoveAll(cp.tmpDir)
		}
	})
	return cp.err
}
