package agnhost

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// A service is one socket a simulated server answers on: over TCP with
// an HTTP handler (TLS when tls is set) or raw (conn), or over UDP with
// udp's reply to each datagram (none when it returns nil).
type service struct {
	port    int
	handler http.Handler
	tls     *tls.Config
	conn    func(net.Conn)
	udp     func(msg []byte, from net.Addr) []byte
}

// serve answers on every service until ctx ends. A socket that cannot be
// opened is reported on stderr and the others still answer (agnhost
// would exit; a simulated pod whose address cannot be bound keeps
// running, as the runtime's own listeners do).
func (c *cmd) serve(ctx context.Context, services []service) error {
	var closers []io.Closer
	var wg sync.WaitGroup
	for _, s := range services {
		cls, err := c.open(s, &wg)
		if err != nil {
			fmt.Fprintln(c.p.Stderr, err)
		}
		closers = append(closers, cls...)
	}
	<-ctx.Done()
	for _, cl := range closers {
		cl.Close()
	}
	wg.Wait()
	return ctx.Err()
}

// open starts answering for s.
func (c *cmd) open(s service, wg *sync.WaitGroup) ([]io.Closer, error) {
	if c.p.Net == nil {
		return nil, fmt.Errorf("listen tcp :%d: the container has no network", s.port)
	}
	var closers []io.Closer
	if s.udp != nil {
		pcs, err := c.p.Net.ListenPacket(s.port)
		for _, pc := range pcs {
			wg.Go(func() { answerPackets(pc, s.udp) })
			closers = append(closers, pc)
		}
		return closers, err
	}
	ls, err := c.p.Net.Listen(s.port)
	var srv *http.Server
	if s.handler != nil && len(ls) > 0 {
		srv = &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
		closers = append(closers, srv) // closing it ends its connections too, as the process's end does
	}
	for _, l := range ls {
		if s.tls != nil {
			l = tls.NewListener(l, s.tls)
		}
		if srv != nil {
			wg.Go(func() { _ = srv.Serve(l) })
			continue
		}
		conns := &connSet{open: map[net.Conn]struct{}{}}
		closers = append(closers, l, conns) // the listener first: no new connection after
		wg.Go(func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				if !conns.add(conn) {
					return
				}
				// One goroutine per connection, as agnhost's handlers run.
				wg.Go(func() {
					defer conns.done(conn)
					s.conn(conn)
				})
			}
		})
	}
	return closers, err
}

// connSet is a raw service's open connections: closing it closes them,
// as the process's end does.
type connSet struct {
	mu     sync.Mutex
	open   map[net.Conn]struct{}
	closed bool
}

// add tracks conn, or closes it and says false once the set is closed.
func (cs *connSet) add(conn net.Conn) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		conn.Close()
		return false
	}
	cs.open[conn] = struct{}{}
	return true
}

// done closes conn once its handler has returned.
func (cs *connSet) done(conn net.Conn) {
	cs.mu.Lock()
	delete(cs.open, conn)
	cs.mu.Unlock()
	conn.Close()
}

// Close closes every open connection.
func (cs *connSet) Close() error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.closed = true
	for conn := range cs.open {
		conn.Close()
	}
	return nil
}

// answerPackets replies to each datagram pc receives until it is closed
// or a read fails (agnhost's UDP servers exit on a failed read).
func answerPackets(pc net.PacketConn, reply func([]byte, net.Addr) []byte) {
	buf := make([]byte, 2048)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if out := reply(buf[:n], from); out != nil {
			_, _ = pc.WriteTo(out, from)
		}
	}
}

// serveExiting serves what services builds, and runs background (when
// not nil) beside it, until ctx ends or the program exits: both get exit,
// which ends the process with a status (as agnhost's os.Exit and
// log.Fatal do from a handler or a goroutine), and background gets the
// process's context, which ends with it. The process returns once
// background has.
func (c *cmd) serveExiting(ctx context.Context, background func(ctx context.Context, exit func(status int)), services func(exit func(status int)) []service) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var status atomic.Int32
	status.Store(-1)
	exit := func(code int) {
		if status.CompareAndSwap(-1, int32(code)) {
			cancel()
		}
	}
	var wg sync.WaitGroup
	if background != nil {
		wg.Go(func() { background(ctx, exit) })
	}
	err := c.serve(ctx, services(exit))
	cancel()
	wg.Wait()
	if code := status.Load(); code != -1 {
		return int(code), nil
	}
	return 0, err
}
