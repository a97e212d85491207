// Package controlplane runs the upstream Kubernetes control plane in
// podtrace's process: etcd (embedded with mutual TLS, or external), the real
// kube-apiserver, kube-controller-manager and kube-scheduler (engine/upstream)
// with podtrace's seams installed (engine/hooks), and hands out clients for
// each component's identity.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"

	"github.com/podtrace/podtrace/engine/etcd"
	apihooks "github.com/podtrace/podtrace/engine/hooks/api"
	schedhooks "github.com/podtrace/podtrace/engine/hooks/sched"
	"github.com/podtrace/podtrace/engine/identity"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/pki"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/engine/upstream"
)

// Config says where the control plane keeps its state.
type Config struct {
	// DataDir keeps etcd data, certificates, tokens, logs and the
	// kubeconfig across restarts; empty means a temporary directory removed
	// on Close.
	DataDir string
	// EtcdEndpoints use an external etcd instead of the embedded one;
	// EtcdTLS is how to reach it (CA, client certificate and key).
	EtcdEndpoints []string
	EtcdTLS       etcd.TLSFiles
	// UnsafeNoFsync turns off etcd's fsync (benchmarks, tests).
	UnsafeNoFsync bool
	// Listener, when set, is where the API server serves (bound before
	// etcd starts, its port is not taken by a client's ephemeral port in
	// the meantime); nil: a free loopback port.
	Listener net.Listener
	// Tracer receives the stage events of the seams and holds their faults
	// and breakpoints; nil runs the components without podtrace's hooks.
	Tracer *trace.Tracer
	// KubeletDial is how kube-apiserver reaches the kubelets; a plain
	// dialer when nil.
	KubeletDial utilnet.DialFunc
	// Controllers is kube-controller-manager's --controllers ("*" when empty).
	Controllers string
	// AdvertiseAddress, outside a pod network namespace, is an address of
	// this host that pods reach (with real containers, the first node's
	// gateway): kube-apiserver advertises it and keeps default/kubernetes's
	// endpoints there, and whoever sets it forwards that address, at the
	// API server's port, to the API server. Empty: no endpoints.
	AdvertiseAddress string
}

// ControlPlane is a running etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler.
type ControlPlane struct {
	Etcd       *etcd.Server
	API        *upstream.APIServer
	PKI        *pki.Bundle
	Kubeconfig string // path of the admin kubeconfig
	DataDir    string
	LogFile    string // every component's log (klog)
	// Scheduler is kube-scheduler's seam (nil without a Tracer).
	Scheduler *schedhooks.Hooks

	// stop stops the components in order (stopInOrder), once: when the
	// caller's context ends, or on Close.
	stop func()
	// stopComponents ends kube-controller-manager's and kube-scheduler's
	// context, and stopAPI kube-apiserver's.
	stopComponents, stopAPI context.CancelFunc
	mu                      sync.Mutex // guards kcmDone
	kcmDone                 <-chan struct{}
	tmpDir                  string
	lock                    *os.File
	closeLog                func() error
	once                    sync.Once
	err                     error
}

// Identities the control plane's own components use.
var (
	controllerManager = identity.User{Name: identity.KubeControllerManager}
	scheduler         = identity.User{Name: identity.KubeScheduler}
)

// Start brings up etcd and the control plane, writes the kubeconfig, and
// returns once the cluster takes its first pod (WaitReady).
func Start(ctx context.Context, cfg Config) (*ControlPlane, error) {
	cp, err := Launch(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err = cp.WaitReady(ctx); err != nil {
		cp.Close()
		return nil, err
	}
	return cp, nil
}

// Launch brings up etcd and the control plane and writes the kubeconfig. It
// returns once kube-apiserver is ready and kube-controller-manager and
// kube-scheduler have started, before their controllers have done their
// first work: the caller starts the kubelets meanwhile, then calls
// WaitReady.
func Launch(ctx context.Context, cfg Config) (*ControlPlane, error) {
	cp := &ControlPlane{DataDir: cfg.DataDir}
	if cp.DataDir == "" {
		dir, err := os.MkdirTemp("", "podtrace-")
		if err != nil {
			return nil, fmt.Errorf("start control plane: %w", err)
		}
		cp.DataDir, cp.tmpDir = dir, dir
	}
	if err := cp.start(ctx, cfg); err != nil {
		cp.Close()
		return nil, err
	}
	return cp, nil
}

// start runs kube-apiserver on a context of its own, and the other
// components on one that ends with ctx; when it ends, or on Close,
// stopInOrder stops them all.
func (cp *ControlPlane) start(ctx context.Context, cfg Config) error {
	components, stopComponents := context.WithCancel(ctx)
	ctx, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
	cp.stopComponents, cp.stopAPI = stopComponents, stopAPI
	cp.stop = sync.OnceFunc(cp.stopInOrder)
	context.AfterFunc(components, cp.stop)
	var err error
	if err = os.MkdirAll(cp.DataDir, 0o700); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	if cp.lock, err = lockDir(cp.DataDir); err != nil {
		return err
	}
	cp.LogFile = filepath.Join(cp.DataDir, "podtrace.log")
	if cp.closeLog, err = logs.ToFile(cp.LogFile); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	advertiseArgs, advertised := advertise(cfg.AdvertiseAddress)
	var advertisedIPs []net.IP
	if ip := net.ParseIP(advertised); ip != nil {
		advertisedIPs = append(advertisedIPs, ip)
	}
	if cp.PKI, err = pki.Ensure(filepath.Join(cp.DataDir, "pki"), advertisedIPs...); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	if err = cp.PKI.EnsureKubeletClient(); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	if err = cp.PKI.EnsureFrontProxy(); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	if err = cp.PKI.EnsureEtcd(); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	saKey := cp.PKI.Path("sa.key")
	if _, _, err = keyutil.LoadOrGenerateKeyFile(saKey); err != nil {
		return fmt.Errorf("start control plane: service account key: %w", err)
	}
	if err = cp.startEtcd(ctx, cfg); err != nil {
		return err
	}
	api := upstream.APIServerConfig{Listener: cfg.Listener, EtcdServers: cp.Etcd.Endpoints, EtcdTLS: cp.Etcd.ClientTLS,
		ServingCertFile: cp.PKI.Path(pki.ServingCertFile), ServingKeyFile: cp.PKI.Path(pki.ServingKeyFile),
		ClientCAFile: cp.PKI.Path(pki.CACertFile), ServiceAccountKeyFile: saKey,
		KubeletDial: cfg.KubeletDial, KubeletClientCertFile: cp.PKI.Path(pki.KubeletClientCertFile),
		KubeletClientKeyFile: cp.PKI.Path(pki.KubeletClientKeyFile),
		FrontProxyCAFile:     cp.PKI.Path(pki.FrontProxyCACertFile), FrontProxyClientUser: pki.FrontProxyClientUser,
		ProxyClientCertFile: cp.PKI.Path(pki.FrontProxyClientCertFile), ProxyClientKeyFile: cp.PKI.Path(pki.FrontProxyClientKeyFile)}
	if cfg.Tracer != nil {
		api.Hooks = apihooks.New(cfg.Tracer)
	}
	api.ExtraArgs = advertiseArgs
	if api.ExtraArgs, err = cp.tracingArgs(api.ExtraArgs); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	if cp.API, err = upstream.StartAPIServer(ctx, api); err != nil {
		return err
	}
	if err = cp.bootstrap(ctx); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	cp.Kubeconfig = filepath.Join(cp.DataDir, "kubeconfig")
	if err = cp.PKI.WriteKubeconfig(cp.Kubeconfig, cp.API.URL); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	kcm, err := cp.componentKubeconfig(controllerManager, "kube-controller-manager")
	if err != nil {
		return err
	}
	// Under mu, so that stopInOrder either finds the components' context
	// ended first, or waits for this controller manager to stop.
	cp.mu.Lock()
	ended := context.Cause(components)
	if ended == nil {
		cp.kcmDone, err = upstream.StartControllerManager(components, upstream.ControllerManagerConfig{Kubeconfig: kcm,
			ServiceAccountKeyFile: saKey, RootCAFile: cp.PKI.Path(pki.CACertFile), Controllers: cfg.Controllers,
			ClusterSigningCertFile: cp.PKI.Path(pki.CACertFile), ClusterSigningKeyFile: cp.PKI.Path(pki.CAKeyFile)})
	}
	cp.mu.Unlock()
	if ended != nil {
		return fmt.Errorf("start control plane: %w", ended)
	}
	if err != nil {
		return err
	}
	sched, err := cp.componentKubeconfig(scheduler, "kube-scheduler")
	if err != nil {
		return err
	}
	sc := upstream.SchedulerConfig{Kubeconfig: sched, Dir: cp.DataDir}
	if cfg.Tracer != nil {
		sc.Hooks = schedhooks.New(cfg.Tracer)
		cp.Scheduler = sc.Hooks
	}
	return upstream.StartScheduler(components, sc)
}

// WaitReady waits until the cluster takes its first pod: the default
// ServiceAccount is in place and the hostPath delete policy in force.
func (cp *ControlPlane) WaitReady(ctx context.Context) error {
	if err := cp.waitDefaultServiceAccount(ctx); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return err
	}
	return waitHostPathDeletePolicy(ctx, client)
}

// waitDefaultServiceAccount waits for the serviceaccount controller to give
// the default namespace its default ServiceAccount: until then the
// ServiceAccount admission plugin refuses every pod there, and a cluster
// that refuses the first pod it is given is not ready.
func (cp *ControlPlane) waitDefaultServiceAccount(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("start control plane: no default service account (log: %s): %w", cp.LogFile, err)
	}
	return nil
}

func (cp *ControlPlane) startEtcd(ctx context.Context, cfg Config) error {
	ec := etcd.Config{DataDir: filepath.Join(cp.DataDir, "etcd"), Endpoints: cfg.EtcdEndpoints,
		LogFile: filepath.Join(cp.DataDir, "etcd.log"), UnsafeNoFsync: cfg.UnsafeNoFsync, ClientTLS: cfg.EtcdTLS}
	if len(cfg.EtcdEndpoints) == 0 {
		ca := cp.PKI.Path(pki.CACertFile)
		ec.ServerTLS = etcd.TLSFiles{CAFile: ca, CertFile: cp.PKI.Path(pki.EtcdServerCertFile), KeyFile: cp.PKI.Path(pki.EtcdServerKeyFile)}
		ec.ClientTLS = etcd.TLSFiles{CAFile: ca, CertFile: cp.PKI.Path(pki.EtcdClientCertFile), KeyFile: cp.PKI.Path(pki.EtcdClientKeyFile)}
		ec.PeerTLS = etcd.TLSFiles{CAFile: ca, CertFile: cp.PKI.Path(pki.EtcdPeerCertFile), KeyFile: cp.PKI.Path(pki.EtcdPeerKeyFile)}
		ec.PeerCommonName = pki.EtcdPeerUser
	}
	var err error
	cp.Etcd, err = etcd.Start(ctx, ec)
	return err
}

// bootstrap gives the viewer of the kubeconfig's second context read access
// to its namespace, with upstream's own "view" ClusterRole, lets
// kube-apiserver use the kubelets' API, and installs HostPathDeletePolicy
// before kube-controller-manager starts.
func (cp *ControlPlane) bootstrap(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return err
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "podtrace-viewer", Namespace: pki.ViewerNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: pki.ViewerUser}},
	}
	if _, err = client.RbacV1().RoleBindings(rb.Namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// What kube-apiserver may do on the kubelets' API (kubeadm binds the same).
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "podtrace:apiserver-kubelet-client"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: pki.KubeletClientUser}},
	}
	if _, err = client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return applyHostPathDeletePolicy(ctx, client)
}

// componentKubeconfig writes the kubeconfig of one of the control plane's
// own components and returns its path.
func (cp *ControlPlane) componentKubeconfig(user identity.User, name string) (string, error) {
	cert, key, err := cp.PKI.IssueClient(user.Name, user.Groups)
	if err != nil {
		return "", fmt.Errorf("start control plane: %w", err)
	}
	path := filepath.Join(cp.DataDir, name+".kubeconfig")
	err = pki.WriteKubeconfig(path, cp.API.URL, cp.PKI.CAPEM, name,
		pki.KubeconfigUser{Name: user.Name, Context: name, CertPEM: cert, KeyPEM: key})
	return path, err
}

// RestConfig returns a client configuration for user: a client certificate
// the cluster CA signs for the user and its groups, as kubeadm gives every
// component and kubelet (no static token file).
func (cp *ControlPlane) RestConfig(user identity.User, userAgent string) (*rest.Config, error) {
	cfg := &rest.Config{
		Host:            cp.API.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.PKI.CAPEM},
		UserAgent:       userAgent,
		QPS:             -1, // no client-side rate limit: the engine's own components
		Timeout:         60 * time.Second,
		ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf",
			AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json"},
	}
	cert, key, err := cp.PKI.IssueClient(user.Name, user.Groups)
	if err != nil {
		return nil, err
	}
	cfg.CertData, cfg.KeyData = cert, key
	return cfg, nil
}

// Client returns a clientset acting as user.
func (cp *ControlPlane) Client(user identity.User, userAgent string) (kubernetes.Interface, error) {
	cfg, err := cp.RestConfig(user, userAgent)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// AdminConfig returns the admin's client configuration (client certificate).
func (cp *ControlPlane) AdminConfig() *rest.Config {
	return &rest.Config{Host: cp.API.URL, UserAgent: "podtrace",
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.PKI.CAPEM, CertData: cp.PKI.AdminCertPEM, KeyData: cp.PKI.AdminKeyPEM},
		QPS:             -1, Timeout: 60 * time.Second}
}

// stopInOrder stops kube-controller-manager and kube-scheduler, then
// kube-apiserver once kube-controller-manager has stopped. It may still be
// building its controllers (just after a restart, when the default service
// account is already there), and without kube-apiserver that fails: the
// namespace controller then ends the process, and the controller manager's
// shared informers keep their process-wide name, so that no other one can
// start in this process.
func (cp *ControlPlane) stopInOrder() {
	cp.stopComponents()
	cp.mu.Lock()
	kcmDone := cp.kcmDone
	cp.mu.Unlock()
	waitDone(kcmDone)
	cp.stopAPI()
}

// Close stops the components and etcd and removes a temporary data dir.
func (cp *ControlPlane) Close() error {
	cp.once.Do(func() {
		if cp.stop != nil {
			cp.stop()
		}
		if cp.API != nil {
			waitDone(cp.API.Done())
		}
		if cp.Etcd != nil {
			cp.err = cp.Etcd.Close()
		}
		if cp.lock != nil {
			cp.lock.Close()
		}
		if cp.closeLog != nil {
			cp.closeLog()
		}
		if cp.tmpDir != "" {
			cp.err = errors.Join(cp.err, os.RemoveAll(cp.tmpDir))
		}
	})
	return cp.err
}

// waitDone waits up to 30 seconds for done to close; a nil done is not
// waited for.
func waitDone(done <-chan struct{}) {
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
}

// AdvertiseAddress is kube-apiserver's address in the pod network namespace
// (engine/podnet): the first of its node network.
var AdvertiseAddress = podnet.HostIP(1).String()

// advertise returns the kube-apiserver flags for its own endpoints, and the
// address it advertises (empty: none). The
// Endpoints and EndpointSlice APIs refuse loopback addresses, so on
// loopback alone the endpoint reconciler is off and default/kubernetes has
// none (as in upstream's integration test servers). In a pod network
// namespace kube-apiserver advertises AdvertiseAddress, made local there,
// and elsewhere the address it is given (host, forwarded by the caller);
// its lease reconciler then keeps default/kubernetes's endpoints, as on a
// real control plane node.
func advertise(host string) (args []string, addr string) {
	none := []string{"--endpoint-reconciler-type=none"}
	if podnet.Inside() {
		host = AdvertiseAddress
		if err := podnet.AddRange(AdvertiseAddress + "/32"); err != nil {
			klog.Warningf("kube-apiserver keeps no endpoints for default/kubernetes: %v", err)
			return none, ""
		}
	}
	if host == "" {
		return none, ""
	}
	return []string{"--advertise-address=" + host, "--endpoint-reconciler-type=lease"}, host
}
