package proc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"mvdan.cc/sh/v3/interp"
)

// Network is where a container's servers listen: its pod's address, and
// the host ports mapped to the container's ports. The simulated runtime
// gives each container its pod's.
type Network interface {
	// Listen opens TCP listeners for port: on the pod's address, and on
	// the host ports mapped to it. It returns those it opened, and an
	// error when the pod's address could not be bound.
	Listen(port int) ([]net.Listener, error)
	// ListenPacket opens UDP sockets for port, as Listen does.
	ListenPacket(port int) ([]net.PacketConn, error)
}

// WithImage adds to f the files of image that the simulation knows (see
// imageFiles). It returns f.
func (f *FS) WithImage(image string) *FS {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addImage(image, "/")
	return f
}

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

// agnhost runs the subcommands of Kubernetes' e2e test image
// (registry.k8s.io/e2e-test-images/agnhost, test/images/agnhost) that
// the conformance specs read back: the servers serve-hostname, netexec,
// porter, test-webserver, liveness, nettest, guestbook and
// logs-generator on the ports and with the answers of agnhost 2.x;
// webhook and crd-conversion-webhook with upstream's own handlers
// (webhook.go); test-service-account-issuer-discovery (oidc.go); pause
// (the image's default command), mounttest, entrypoint-tester, etc-hosts,
// dns-suffix and dns-server-list. Any other
// subcommand is taken for a server, as an unknown command is. argv is
// the whole command line.
func (c *commands) agnhost(ctx context.Context, hc interp.HandlerContext, argv []string) error {
	args := argv[1:]
	if len(args) == 0 {
		return c.unknown(ctx)
	}
	if c.p.Hostname == "" {
		c.p.Hostname = hc.Env.Get("HOSTNAME").String()
	}
	fs := pflag.NewFlagSet("agnhost "+args[0], pflag.ContinueOnError)
	fs.SetOutput(hc.Stderr)
	klogFlags(fs)
	var build func() ([]service, error)
	switch args[0] {
	case "serve-hostname":
		build = c.serveHostname(fs)
	case "netexec":
		build = c.netexec(ctx, fs, newLogger(hc.Stderr))
	case "porter":
		build = c.porter(hc, fs)
	case "test-webserver":
		port := fs.Int("port", 80, "Port number.")
		build = func() ([]service, error) { return []service{{port: *port, handler: c.fileServer()}}, nil }
	case "webhook":
		fs.String("sidecar-image", "", "Image to be used as the injected sidecar")
		build = c.admissionServer(fs, webhookMux)
	case "crd-conversion-webhook":
		build = c.admissionServer(fs, crdConversionMux)
	case "liveness":
		build = func() ([]service, error) { return liveness(), nil }
	case "pause":
		fmt.Fprint(hc.Stdout, "Paused\nSignals registered\n")
		<-ctx.Done()
		return ctx.Err()
	case "nettest":
		return c.nettest(ctx, hc, fs, args[1:])
	case "guestbook":
		return c.guestbook(ctx, hc, fs, args[1:])
	case "logs-generator":
		return c.logsGenerator(ctx, hc, fs, args[1:])
	case "mounttest":
		return c.mounttest(ctx, hc, fs, args[1:])
	case "test-service-account-issuer-discovery":
		return c.oidcDiscovery(ctx, hc, fs, args[1:])
	case "entrypoint-tester":
		fmt.Fprintf(hc.Stdout, "%v\n", argv)
		return nil
	case "etc-hosts":
		return exitStatus(etcHosts(c.p.FS, hc.Stdout, hc.Stderr))
	case "dns-suffix", "dns-server-list":
		rc := readResolvConf(c.p.FS)
		list := rc.search
		if args[0] == "dns-server-list" {
			list = rc.servers
		}
		fmt.Fprintln(hc.Stdout, strings.Join(list, ","))
		return nil
	default:
		return c.unknown(ctx)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return interp.ExitStatus(1)
	}
	services, err := build()
	if err != nil {
		fmt.Fprintln(hc.Stderr, err)
		return interp.ExitStatus(1)
	}
	return c.serve(ctx, hc, services)
}

// klogFlags accepts the logging flags every agnhost command has (klog's,
// which upstream's agnhost registers on its root command and the e2e
// specs pass: --alsologtostderr, -v=4), and ignores them: the simulated
// process shares podtrace's logger.
func klogFlags(fs *pflag.FlagSet) {
	for _, name := range []string{"alsologtostderr", "logtostderr", "add_dir_header", "one_output", "skip_headers", "skip_log_headers"} {
		fs.Bool(name, false, "klog's (ignored)")
	}
	for _, name := range []string{"vmodule", "log_dir", "log_file", "log_file_max_size", "stderrthreshold", "log_backtrace_at"} {
		fs.String(name, "", "klog's (ignored)")
	}
	fs.StringP("v", "v", "0", "klog's verbosity (ignored)")
}

// logger writes log lines as Go's log package does (agnhost's), from
// any goroutine.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func newLogger(w io.Writer) *logger { return &logger{w: w} }

// printf writes one line, with the date and time before it.
func (l *logger) printf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s %s\n", time.Now().Format("2006/01/02 15:04:05"), fmt.Sprintf(format, a...))
}

// unknown is what a command the simulation does not know does: under exec
// it succeeds at once, as a container's process it serves until stopped.
func (c *commands) unknown(ctx context.Context) error {
	if c.p.Exec {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// serveHostname is agnhost serve-hostname: the host name over HTTP (the
// default), or raw over TCP and UDP, on --port (9376).
func (c *commands) serveHostname(fs *pflag.FlagSet) func() ([]service, error) {
	doTCP := fs.Bool("tcp", false, "Serve raw over TCP.")
	doUDP := fs.Bool("udp", false, "Serve raw over UDP.")
	doHTTP := fs.Bool("http", true, "Serve HTTP.")
	doClose := fs.Bool("close", false, "Close connection per each HTTP request.")
	port := fs.Int("port", 9376, "Port number.")
	return func() ([]service, error) {
		if *doHTTP && (*doTCP || *doUDP) {
			return nil, errors.New("Can't server TCP/UDP mode and HTTP mode at the same time")
		}
		name := []byte(c.p.Hostname)
		var out []service
		if *doTCP {
			out = append(out, service{port: *port, conn: func(conn net.Conn) { _, _ = conn.Write(name) }})
		}
		if *doUDP {
			out = append(out, service{port: *port, udp: func([]byte, net.Addr) []byte { return name }})
		}
		if *doHTTP {
			out = append(out, service{port: *port, handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if *doClose {
					w.Header().Add("Connection", "close")
				}
				_, _ = w.Write(name)
			})})
		}
		return out, nil
	}
}

// porter is agnhost porter: each SERVE_PORT_N, SERVE_TCP_PORT_N and
// SERVE_TLS_PORT_N variable's value over HTTP (HTTPS) on port N, and each
// SERVE_UDP_PORT_N's as the reply to a datagram. TLS uses CERT_FILE and
// KEY_FILE, else a certificate for 127.0.0.1 and ::1 as the image's
// localhost.crt.
func (c *commands) porter(hc interp.HandlerContext, fs *pflag.FlagSet) func() ([]service, error) {
	jsonResponse := fs.Bool("json-response", false, "Responds to requests with a json response that includes the default value with the http.Request Method")
	return func() ([]service, error) {
		var out []service
		for _, kv := range environ(hc.Env) {
			key, value, _ := strings.Cut(kv, "=")
			for _, prefix := range []string{"SERVE_PORT_", "SERVE_TCP_PORT_", "SERVE_TLS_PORT_", "SERVE_UDP_PORT_"} {
				p, ok := strings.CutPrefix(key, prefix)
				port, err := strconv.Atoi(p)
				if !ok || err != nil {
					continue
				}
				s := service{port: port, handler: porterHandler(value, *jsonResponse)}
				switch prefix {
				case "SERVE_UDP_PORT_":
					s = service{port: port, udp: func([]byte, net.Addr) []byte { return []byte(value) }}
				case "SERVE_TLS_PORT_":
					if s.tls, err = c.tlsConfig(hc.Env.Get("CERT_FILE").String(), hc.Env.Get("KEY_FILE").String()); err != nil {
						return nil, err
					}
				}
				out = append(out, s)
			}
		}
		return out, nil
	}
}

// porterHandler answers value, or {"Method":...,"Body":value} with
// --json-response.
func porterHandler(value string, asJSON bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asJSON {
			w.Header().Set("Content-Type", "application/json")
			writeJSON(w, struct{ Method, Body string }{r.Method, value})
			return
		}
		fmt.Fprint(w, value)
	})
}

// fileServer is agnhost test-webserver's: the container's files by path.
func (c *commands) fileServer() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "private")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		name := path.Clean("/" + r.URL.Path)
		if info, err := c.p.FS.Stat(name); err == nil && info.IsDir() {
			entries, _ := c.p.FS.ReadDir(name)
			names := make([]string, 0, len(entries))
			for _, e := range entries {
				names = append(names, e.Name())
			}
			sort.Strings(names)
			fmt.Fprintf(w, "<pre>\n%s</pre>\n", strings.Join(names, "\n"))
			return
		}
		b, err := readFile(c.p.FS, name)
		if err != nil {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		_, _ = w.Write(b)
	})
}

// serve answers on every service until ctx ends. A socket that cannot be
// opened is reported on stderr and the others still answer (agnhost
// would exit; a simulated pod whose address cannot be bound keeps
// running, as the runtime's own listeners do).
func (c *commands) serve(ctx context.Context, hc interp.HandlerContext, services []service) error {
	var closers []io.Closer
	var wg sync.WaitGroup
	for _, s := range services {
		cls, err := c.open(s, &wg)
		if err != nil {
			fmt.Fprintln(hc.Stderr, err)
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
func (c *commands) open(s service, wg *sync.WaitGroup) ([]io.Closer, error) {
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
		closers = append(closers, l)
		wg.Go(func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				s.conn(conn)
				conn.Close()
			}
		})
	}
	return closers, err
}

// answerPackets replies to each datagram pc receives until it is closed.
func answerPackets(pc net.PacketConn, reply func([]byte, net.Addr) []byte) {
	buf := make([]byte, 2048)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if out := reply(buf[:n], from); out != nil {
			_, _ = pc.WriteTo(out, from)
		}
	}
}
