// Package etcd runs podtrace's etcd: embedded in the process by default
// (go.etcd.io/etcd/server/v3/embed), or external endpoints given by the user.
// Either way the rest of the engine sees a *clientv3.Client.
package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Config says where etcd lives.
type Config struct {
	// DataDir holds the embedded member's data. Empty means a fresh
	// temporary directory removed on Close.
	DataDir string
	// Endpoints, when set, are an external etcd's client URLs; nothing is embedded.
	Endpoints []string
	// LogFile receives etcd's logs (never the terminal). Empty means
	// DataDir/etcd.log (or the temporary dir's).
	LogFile string
	// ReadyTimeout bounds the wait for the embedded member to serve (default 30 s).
	ReadyTimeout time.Duration
	// UnsafeNoFsync turns off fsync, for benchmarks and tests that want speed
	// over durability (etcd's --unsafe-no-fsync).
	UnsafeNoFsync bool
	// ServerTLS is the embedded member's serving pair and the CA its clients'
	// certificates must be signed by: with it the client port speaks only
	// mutual TLS (etcd's --client-cert-auth). Empty means plain HTTP.
	ServerTLS TLSFiles
	// PeerTLS is the embedded member's peer pair and the CA its peers'
	// certificates must be signed by: with it the peer port speaks only
	// mutual TLS (etcd's --peer-client-cert-auth) and accepts only
	// PeerCommonName. Empty means plain HTTP, with no authentication.
	PeerTLS TLSFiles
	// PeerCommonName is the one certificate common name the peer port
	// accepts (etcd's --peer-cert-allowed-cn).
	PeerCommonName string
	// ClientTLS is the pair and CA this process's clients (podtrace's own
	// and kube-apiserver's) use, for the embedded member or the endpoints.
	ClientTLS TLSFiles
}

// TLSFiles names the PEM files of one side of a TLS connection.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
}

// Empty reports whether no file is named.
func (f TLSFiles) Empty() bool { return f.CAFile == "" && f.CertFile == "" && f.KeyFile == "" }

// Server is a running etcd and a client connected to it.
type Server struct {
	// Client talks to the member.
	Client *clientv3.Client
	// Endpoints are the client URLs.
	Endpoints []string
	// LogFile is where the embedded member logs; empty for external etcd.
	LogFile string
	// ClientTLS is what clients of Endpoints present and trust.
	ClientTLS TLSFiles

	embedded *embed.Etcd
	log      *os.File // the embedded member's log, closed with it
	tmpDir   string
}

// Start starts an embedded member (or connects to Endpoints) and returns once
// it answers, or with an error after the ready timeout.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if len(cfg.Endpoints) > 0 {
		return connect(ctx, cfg.Endpoints, cfg.ClientTLS, nil, "")
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	s := &Server{}
	dir := cfg.DataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "podtrace-etcd-")
		if err != nil {
			return nil, fmt.Errorf("start etcd: %w", err)
		}
		dir, s.tmpDir = tmp, tmp
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	if cfg.LogFile == "" {
		cfg.LogFile = filepath.Join(dir, "etcd.log")
	}
	log, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.cleanup()
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	s.log = log
	e, err := startEmbedded(filepath.Join(dir, "member-data"), cfg, fileLogger(log))
	if err != nil {
		s.cleanup()
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		s.cleanup()
		return nil, fmt.Errorf("start etcd (log: %s): %w", cfg.LogFile, err)
	case <-time.After(cfg.ReadyTimeout):
		e.Close()
		s.cleanup()
		return nil, fmt.Errorf("start etcd: not ready after %s (log: %s)", cfg.ReadyTimeout, cfg.LogFile)
	case <-ctx.Done():
		e.Close()
		s.cleanup()
		return nil, fmt.Errorf("start etcd: %w", ctx.Err())
	}
	go drain(e)
	scheme := "http://"
	if !cfg.ServerTLS.Empty() {
		scheme = "https://"
	}
	endpoint := scheme + e.Clients[0].Addr().String()
	srv, err := connect(ctx, []string{endpoint}, cfg.ClientTLS, e, cfg.LogFile)
	if err != nil {
		e.Close()
		s.cleanup()
		return nil, err
	}
	srv.tmpDir, srv.log = s.tmpDir, s.log
	return srv, nil
}

// fileLogger logs to f at warn level, in etcd's own JSON format. podtrace
// builds it, rather than naming the file in LogOutputs, because zap never
// closes the files it opens: each start (and each retry) would leak one.
func fileLogger(f *os.File) *zap.Logger {
	enc := zapcore.NewJSONEncoder(logutil.DefaultZapLoggerConfig.EncoderConfig)
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(f), zapcore.WarnLevel), zap.AddCaller())
}

func embedConfig(dir string, cfg Config, ports []int, lg *zap.Logger) *embed.Config {
	ec := embed.NewConfig()
	ec.Name = "podtrace"
	ec.Dir = dir
	ec.Logger = "zap"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	ec.LogLevel = "warn"
	// NewConfig leaves this at zero (the etcd binary's flag supplies it), and
	// at zero every request counts as expensive: each would be turned into
	// text and logged as a warning.
	ec.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	client := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	if t := cfg.ServerTLS; !t.Empty() {
		client.Scheme = "https"
		ec.ClientTLSInfo = transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.CAFile, ClientCertAuth: true}
	}
	peer := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
	if t := cfg.PeerTLS; !t.Empty() {
		// A single member never dials a peer, but its peer port listens:
		// without TLS anything on loopback could speak raft to it.
		peer.Scheme = "https"
		ec.PeerTLSInfo = transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.CAFile,
			ClientCertAuth: true, AllowedCNs: []string{cfg.PeerCommonName}}
	}
	ec.ListenClientUrls = []url.URL{client}
	ec.AdvertiseClientUrls = []url.URL{client}
	ec.ListenPeerUrls = []url.URL{peer}
	ec.AdvertisePeerUrls = []url.URL{peer}
	ec.InitialCluster = ec.Name + "=" + peer.String()
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	// The kube-apiserver's etcd defaults: 8 GiB quota would need a big disk;
	// keep etcd's own default and compact through the API server instead.
	ec.AutoCompactionMode = "periodic"
	ec.AutoCompactionRetention = "5m"
	return ec
}

// drain consumes the member's error channel so a late error never blocks it.
func drain(e *embed.Etcd) {
	for range e.Err() {
	}
}

func connect(ctx context.Context, endpoints []string, tlsFiles TLSFiles, e *embed.Etcd, logFile string) (*Server, error) {
	cc := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		Context:     context.Background(),
	}
	if !tlsFiles.Empty() {
		info := transport.TLSInfo{CertFile: tlsFiles.CertFile, KeyFile: tlsFiles.KeyFile, TrustedCAFile: tlsFiles.CAFile}
		tc, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("connect to etcd %v: %w", endpoints, err)
		}
		cc.TLS = tc
	}
	c, err := clientv3.New(cc)
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %v: %w", endpoints, err)
	}
	s := &Server{Client: c, Endpoints: endpoints, embedded: e, LogFile: logFile, ClientTLS: tlsFiles}
	if err := s.Healthy(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return s, nil
}

// Healthy checks that etcd answers a read within five seconds.
func (s *Server) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.Client.Get(ctx, "health"); err != nil {
		return fmt.Errorf("etcd %v not healthy: %w", s.Endpoints, err)
	}
	return nil
}

// Embedded reports whether the member runs in this process.
func (s *Server) Embedded() bool { return s.embedded != nil }

// Close closes the client and stops the embedded member, removing its data
// when it was temporary.
func (s *Server) Close() error {
	err := s.Client.Close()
	if s.embedded != nil {
		s.embedded.Close()
	}
	s.cleanup()
	return err
}

func (s *Server) cleanup() {
	if s.log != nil {
		s.log.Close()
	}
	if s.tmpDir != "" {
		os.RemoveAll(s.tmpDir)
	}
}

// startEmbedded starts the member on two free loopback ports. Another
// process may take one of them between freePorts and etcd's bind: then it
// tries again on new ones.
func startEmbedded(dir string, cfg Config, lg *zap.Logger) (*embed.Etcd, error) {
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return nil, fmt.Errorf("start etcd: %w", err)
		}
		e, err := embed.StartEtcd(embedConfig(dir, cfg, ports, lg))
		if err == nil {
			return e, nil
		}
		if attempt == 3 || !addrInUse(err) {
			return nil, fmt.Errorf("start etcd (log: %s): %w", cfg.LogFile, err)
		}
	}
}

// addrInUse reports whether err is a bind to a port already taken. etcd
// does not always wrap the listener's error, but keeps its text.
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), syscall.EADDRINUSE.Error())
}

// freePorts asks the kernel for n free loopback ports (a variable, so that
// a test can hand out a taken one).
var freePorts = func(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(errors.New("find a free port"), err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
