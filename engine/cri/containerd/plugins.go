package containerd

import (
	"context"
	"errors"
	"net"
	"sync"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/engine/cri/containerd/cniwire"
)

// pluginServer listens for podtrace-cni on a unix socket.
type pluginServer struct {
	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	observers map[string]cri.Observer // node → what answers its podtrace-cni
	ranges    map[string]string       // node → its pod range set, as host-local words it
}

func listenPlugins(path string) (*pluginServer, error) {
	ln, err := listenUnix(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &pluginServer{ln: ln, ctx: ctx, cancel: cancel, observers: map[string]cri.Observer{}, ranges: map[string]string{}}
	go s.serve()
	return s, nil
}

// addr is the socket's path, for the plugin's configuration.
func (s *pluginServer) addr() string { return s.ln.Addr().String() }

// observe makes obs answer node's podtrace-cni: each ADD is its
// NetworkAdd, each DEL its NetworkDel.
func (s *pluginServer) observe(node string, obs cri.Observer) {
	s.mu.Lock()
	s.observers[node] = obs
	s.mu.Unlock()
}

func (s *pluginServer) setRange(node, rangeSet string) {
	s.mu.Lock()
	s.ranges[node] = rangeSet
	s.mu.Unlock()
}

func (s *pluginServer) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.handle(cniwire.Wrap(c))
	}
}

// handle runs one exchange. Without an observer for the node, the
// command just goes ahead.
func (s *pluginServer) handle(c *cniwire.Conn) {
	defer c.Close()
	var req cniwire.Request
	if err := c.Receive(&req); err != nil {
		return
	}
	s.mu.Lock()
	obs := s.observers[req.Node]
	rangeSet := s.ranges[req.Node]
	s.mu.Unlock()
	report := func() cniwire.Report {
		var r cniwire.Report
		if err := c.Send(cniwire.Verdict{}); err != nil {
			return cniwire.Report{Error: err.Error()}
		}
		if err := c.Receive(&r); err != nil {
			return cniwire.Report{Error: "podtrace-cni ended without a report: " + err.Error()}
		}
		_ = c.Send(cniwire.Verdict{})
		return r
	}
	switch {
	case obs == nil:
		report()
	case req.Command == "ADD":
		ran := false
		n := cri.Network{Pod: &runtimeapi.PodSandboxMetadata{Namespace: req.Namespace, Name: req.Name, Uid: req.UID},
			SandboxID: req.Sandbox, RangeSet: rangeSet, Plugin: PluginName, Delegating: true}
		_, err := obs.NetworkAdd(s.ctx, n, func() (string, error) {
			ran = true
			r := report()
			return r.IP, reportError(r)
		})
		if err != nil && !ran {
			_ = c.Send(cniwire.Verdict{Error: err.Error()})
		}
	default:
		r := report()
		obs.NetworkDel(req.Sandbox, req.IfName, r.Duration, reportError(r))
	}
}

// reportError is the delegated command's error, nil when it succeeded.
func reportError(r cniwire.Report) error {
	if r.Error == "" {
		return nil
	}
	return errors.New(r.Error)
}

func (s *pluginServer) close() error {
	s.cancel()
	err := s.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
