package upstream

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/server/egressselector"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"

	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"github.com/podtrace/podtrace/engine/etcd"
	"github.com/podtrace/podtrace/version"
)

// APIServerHooks are podtrace's seams in kube-apiserver. Register runs on
// the options before they are completed (admission plugins are registered
// there); Install runs on the config between app.NewConfig and
// CreateServerChain, where the authenticator, authorizer, admission chain and
// storage can be wrapped.
type APIServerHooks interface {
	Register(s *options.ServerRunOptions) (admissionPlugins []string)
	Install(c *app.Config)
}

// APIServerConfig is what kube-apiserver is started with.
type APIServerConfig struct {
	// Listener, when set, is where the server serves (it is closed when
	// the server stops or fails to start); nil: a free loopback port.
	Listener net.Listener
	// EtcdServers and EtcdTLS say where the storage is and how to reach it.
	EtcdServers []string
	EtcdTLS     etcd.TLSFiles
	// ServingCertFile and ServingKeyFile are the serving pair; ClientCAFile
	// verifies client certificates (the admin's and the viewer's).
	ServingCertFile, ServingKeyFile, ClientCAFile string
	// ServiceAccountKeyFile signs and verifies service account tokens.
	ServiceAccountKeyFile string
	// ServiceClusterIPRange is the Services' cluster IP range.
	ServiceClusterIPRange string
	// Hooks are podtrace's seams; nil runs plain kube-apiserver.
	Hooks APIServerHooks
	// KubeletClientCertFile and KubeletClientKeyFile are the client pair
	// kube-apiserver presents to kubelets; with them it also verifies the
	// kubelets' serving certificates against ClientCAFile.
	KubeletClientCertFile, KubeletClientKeyFile string
	// FrontProxyCAFile, FrontProxyClientUser, ProxyClientCertFile and
	// ProxyClientKeyFile, when set, turn on the aggregation layer's
	// authentication as kubeadm does: kube-apiserver proxies to extension
	// API servers with the client pair (--proxy-client-cert-file), which
	// they trust by the CA (--requestheader-client-ca-file) and the name.
	FrontProxyCAFile, FrontProxyClientUser  string
	ProxyClientCertFile, ProxyClientKeyFile string
	// KubeletDial is how the API server reaches kubelets (logs, exec,
	// attach, port-forward); a plain dialer when nil.
	KubeletDial utilnet.DialFunc
	// ExtraArgs are more kube-apiserver flags, applied last.
	ExtraArgs []string
}

// APIServer is a kube-apiserver serving in this process.
type APIServer struct {
	// URL is https://host:port.
	URL string
	// Loopback is the server's own privileged loopback client configuration.
	Loopback *rest.Config

	done chan struct{}
	err  error
}

// Done is closed when the server stops serving; Err then says why (nil
// after a clean stop).
func (s *APIServer) Done() <-chan struct{} { return s.done }

// Err is the error the server stopped with, once Done is closed.
func (s *APIServer) Err() error { return s.err }

// StartAPIServer builds kube-apiserver from its options as
// cmd/kube-apiserver/app/testing.StartTestServer does (flags → Complete →
// NewConfig → hooks → CreateServerChain → PrepareRun) and serves it until
// ctx ends. It returns once /readyz answers ok.
func StartAPIServer(ctx context.Context, cfg APIServerConfig) (*APIServer, error) {
	if cfg.ServiceClusterIPRange == "" {
		cfg.ServiceClusterIPRange = "10.96.0.0/12"
	}
	s := options.NewServerRunOptions()
	plugins := []string{"NodeRestriction"}
	if cfg.Hooks != nil {
		plugins = append(plugins, cfg.Hooks.Register(s)...)
	}
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("start kube-apiserver: %w", err)
		}
	}
	addr := ln.Addr().(*net.TCPAddr)
	args := []string{
		"--etcd-servers=" + strings.Join(cfg.EtcdServers, ","),
		"--tls-cert-file=" + cfg.ServingCertFile,
		"--tls-private-key-file=" + cfg.ServingKeyFile,
		"--client-ca-file=" + cfg.ClientCAFile,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=" + strings.Join(plugins, ","),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + cfg.ServiceAccountKeyFile,
		"--service-account-signing-key-file=" + cfg.ServiceAccountKeyFile,
		"--service-cluster-ip-range=" + cfg.ServiceClusterIPRange,
		"--advertise-address=" + addr.IP.String(),
		"--bind-address=" + addr.IP.String(),
		"--secure-port=" + strconv.Itoa(addr.Port),
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none", // on loopback: Endpoints refuse loopback addresses
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		// The engine's own components write fast; lift the in-flight limits as
		// large clusters do.
		"--max-requests-inflight=2000",
		"--max-mutating-requests-inflight=1000",
		// Stopping ends open watches (kubectl get -w, k9s, a UI source) and
		// waits at most this long for them to drain: left at upstream's 0,
		// such a watch held kube-apiserver's shutdown, and so podtrace's
		// exit, for 37 s.
		"--shutdown-watch-termination-grace-period=1s",
	}
	if cfg.KubeletClientCertFile != "" {
		args = append(args, "--kubelet-client-certificate="+cfg.KubeletClientCertFile,
			"--kubelet-client-key="+cfg.KubeletClientKeyFile, "--kubelet-certificate-authority="+cfg.ClientCAFile)
	}
	if cfg.FrontProxyCAFile != "" {
		// kubeadm's flags (cmd/kubeadm/app/phases/controlplane/manifests.go).
		args = append(args, "--requestheader-client-ca-file="+cfg.FrontProxyCAFile,
			"--requestheader-allowed-names="+cfg.FrontProxyClientUser,
			"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--proxy-client-cert-file="+cfg.ProxyClientCertFile, "--proxy-client-key-file="+cfg.ProxyClientKeyFile)
	}
	if t := cfg.EtcdTLS; !t.Empty() {
		args = append(args, "--etcd-cafile="+t.CAFile, "--etcd-certfile="+t.CertFile, "--etcd-keyfile="+t.KeyFile)
	}
	args = append(args, cfg.ExtraArgs...)
	if err := fs.Parse(args); err != nil {
		ln.Close()
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	s.SecureServing.Listener = ln
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		ln.Close()
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		ln.Close()
		return nil, fmt.Errorf("start kube-apiserver: %v", errs)
	}
	config, err := app.NewConfig(completed)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	agg := &config.Aggregator.GenericConfig.Config
	agg.EffectiveVersion = releaseVersion{agg.EffectiveVersion}
	if cfg.KubeletDial != nil {
		config.KubeAPIs.Extra.KubeletClientConfig.Lookup = func(egressselector.NetworkContext) (utilnet.DialFunc, error) {
			return cfg.KubeletDial, nil
		}
	}
	if cfg.Hooks != nil {
		cfg.Hooks.Install(config)
	}
	cc, err := config.Complete()
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	chain, err := app.CreateServerChain(cc)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	prepared, err := chain.PrepareRun()
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	srv := &APIServer{URL: "https://" + addr.String(), done: make(chan struct{}),
		Loopback: rest.CopyConfig(chain.GenericAPIServer.LoopbackClientConfig)}
	go func() { srv.err = prepared.Run(ctx); close(srv.done) }()
	if err := srv.waitReady(ctx); err != nil {
		return nil, fmt.Errorf("start kube-apiserver: %w", err)
	}
	return srv, nil
}

// waitReady polls /readyz until it answers 200.
func (s *APIServer) waitReady(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(s.Loopback)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.done:
			return false, fmt.Errorf("stopped before ready: %w", s.err)
		default:
		}
		code := 0
		body, _ := client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code).Raw()
		last = string(body)
		return code == http.StatusOK, nil
	})
	if err != nil && last != "" {
		return fmt.Errorf("%w (last /readyz: %s)", err, last)
	}
	return err
}

// releaseVersion reports the pinned release in /version when the binary was
// built without Kubernetes' version ldflags (go run, go test): upstream's
// own builds set k8s.io/component-base/version's git fields with
// -ldflags -X, and without them /version would say v0.0.0-master.
type releaseVersion struct {
	basecompatibility.EffectiveVersion
}

// Info implements basecompatibility.EffectiveVersion.
func (v releaseVersion) Info() *apimachineryversion.Info {
	info := v.EffectiveVersion.Info()
	if info != nil && strings.HasPrefix(info.GitVersion, "v0.0.0") {
		info.GitVersion = version.Kubernetes
		info.GitCommit, info.GitTreeState = "", ""
	}
	return info
}
