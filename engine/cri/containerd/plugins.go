package containerd

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/podtrace/podtrace/engine/cri/containerd/cniwire"
)

// PluginHandler answers podtrace-cni for one node: it makes each ADD the
// pod's cni stage and notes each DEL.
type PluginHandler interface {
	// PluginAdd is asked before the delegated ADD. It returns the error
	// the plugin should fail with (a fault) without calling run, or calls
	// run, which lets the delegate run and returns what it did.
	PluginAdd(ctx context.Context, req cniwire.Request, rangeSet string, run func() cniwire.Report) error
	// PluginDel is told what a DEL did.
	PluginDel(req cniwire.Request, r cniwire.Report)
}

// pluginServer listens for podtrace-cni on a unix socket.
type pluginServer struct {
	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	handler func(node string) PluginHandler
	ranges  map[string]string // node → its pod range set, as host-local words it
}

func listenPlugins(path string) (*pluginServer, error) {
	ln, err := listenUnix(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &pluginServer{ln: ln, ctx: ctx, cancel: cancel, ranges: map[string]string{}}
	go s.serve()
	return s, nil
}

// addr is the socket's path, for the plugin's configuration.
func (s *pluginServer) addr() string { return s.ln.Addr().String() }

func (s *pluginServer) setHandler(h func(node string) PluginHandler) {
	s.mu.Lock()
	s.handler = h
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

// handle runs one exchange. Without a handler for the node, the command
// just goes ahead.
func (s *pluginServer) handle(c *cniwire.Conn) {
	defer c.Close()
	var req cniwire.Request
	if err := c.Receive(&req); err != nil {
		return
	}
	s.mu.Lock()
	var h PluginHandler
	if s.handler != nil {
		h = s.handler(req.Node)
	}
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
	case h == nil:
		report()
	case req.Command == "ADD":
		ran := false
		err := h.PluginAdd(s.ctx, req, rangeSet, func() cniwire.Report { ran = true; return report() })
		if err != nil && !ran {
			_ = c.Send(cniwire.Verdict{Error: err.Error()})
		}
	default:
		h.PluginDel(req, report())
	}
}

func (s *pluginServer) close() error {
	s.cancel()
	err := s.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
