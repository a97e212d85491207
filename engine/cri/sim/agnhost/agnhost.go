// Package agnhost is agnhost, Kubernetes' e2e test image's program
// (registry.k8s.io/e2e-test-images/agnhost, test/images/agnhost), in a
// simulated container: a proc.Program the simulated runtime hands its
// processes in Programs, run on the container's files, environment and
// pod network (proc.Process) and nothing of the host.
package agnhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// Programs are agnhost's programs by command name, for a process's
// proc.Process.Programs: /agnhost and /agnhost-2, the image's link to it
// (entrypoint-tester's specs run it).
func Programs() proc.Programs { return proc.Programs{"agnhost": run, "agnhost-2": run} }

// cmd is one agnhost process.
type cmd struct{ p proc.Process }

// run is agnhost as a proc.Program; its servers answer the pod's host
// name, HOSTNAME's value when the process has none.
func run(ctx context.Context, p proc.Process) (int, error) {
	if p.Hostname == "" {
		p.Hostname = p.Getenv("HOSTNAME")
	}
	return (&cmd{p: p}).agnhost(ctx, p.Argv)
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
func (c *cmd) agnhost(ctx context.Context, argv []string) (int, error) {
	args := argv[1:]
	if len(args) == 0 {
		return c.p.Unknown(ctx)
	}
	fs := pflag.NewFlagSet("agnhost "+args[0], pflag.ContinueOnError)
	fs.SetOutput(c.p.Stderr)
	klogFlags(fs)
	var build func() ([]service, error)
	switch args[0] {
	case "serve-hostname":
		build = c.serveHostname(fs)
	case "netexec":
		build = c.netexec(ctx, fs, newLogger(c.p.Stderr))
	case "porter":
		build = c.porter(fs)
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
		fmt.Fprint(c.p.Stdout, "Paused\nSignals registered\n")
		<-ctx.Done()
		return 0, ctx.Err()
	case "nettest":
		return c.nettest(ctx, fs, args[1:])
	case "guestbook":
		return c.guestbook(ctx, fs, args[1:])
	case "logs-generator":
		return c.logsGenerator(ctx, fs, args[1:])
	case "mounttest":
		return c.mounttest(ctx, fs, args[1:])
	case "test-service-account-issuer-discovery":
		return c.oidcDiscovery(ctx, fs, args[1:])
	case "entrypoint-tester":
		fmt.Fprintf(c.p.Stdout, "%v\n", argv)
		return 0, nil
	case "etc-hosts":
		return etcHosts(c.p.FS, c.p.Stdout, c.p.Stderr), nil
	case "dns-suffix", "dns-server-list":
		servers, search := c.p.FS.ResolvConf()
		list := search
		if args[0] == "dns-server-list" {
			list = servers
		}
		fmt.Fprintln(c.p.Stdout, strings.Join(list, ","))
		return 0, nil
	default:
		return c.p.Unknown(ctx)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 1, nil
	}
	services, err := build()
	if err != nil {
		fmt.Fprintln(c.p.Stderr, err)
		return 1, nil
	}
	return 0, c.serve(ctx, services)
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

// serveHostname is agnhost serve-hostname: the host name over HTTP (the
// default), or raw over TCP and UDP, on --port (9376).
func (c *cmd) serveHostname(fs *pflag.FlagSet) func() ([]service, error) {
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
// KEY_FILE, else the image's /localhost.crt and /localhost.key.
func (c *cmd) porter(fs *pflag.FlagSet) func() ([]service, error) {
	jsonResponse := fs.Bool("json-response", false, "Responds to requests with a json response that includes the default value with the http.Request Method")
	return func() ([]service, error) {
		var out []service
		for _, kv := range c.p.Env {
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
					if s.tls, err = c.tlsConfig(c.p.Getenv("CERT_FILE"), c.p.Getenv("KEY_FILE")); err != nil {
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
func (c *cmd) fileServer() http.Handler {
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
		b, err := c.p.FS.ReadFile(name)
		if err != nil {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		_, _ = w.Write(b)
	})
}
