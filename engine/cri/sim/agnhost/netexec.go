package agnhost

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
	"github.com/podtrace/podtrace/internal/syncbuf"
)

// netexec is agnhost netexec: HTTP on --http-port (8080) and UDP on
// --udp-port (8081, -1 for none), answering as agnhost's handlers do
// (/hostname, /hostName, /echo, /clientip, /dial, /healthz, /shell, ...)
// and logging each request as they do (lifecycle hooks' specs read
// "GET /echo?msg=poststart" in its log).
func (c *cmd) netexec(ctx context.Context, fs *pflag.FlagSet, log *logger) func() ([]service, error) {
	httpPort := fs.Int("http-port", 8080, "HTTP Listen Port")
	udpPort := fs.Int("udp-port", 8081, "UDP Listen Port")
	fs.Int("sctp-port", -1, "SCTP Listen Port")
	certFile := fs.String("tls-cert-file", "", "File containing an x509 certificate for HTTPS.")
	keyFile := fs.String("tls-private-key-file", "", "File containing an x509 private key matching --tls-cert-file.")
	override := fs.String("http-override", "", "Override the HTTP handler to always respond as if it were a GET with this path & params")
	fs.String("udp-listen-addresses", "", "A comma separated list of ip addresses the udp servers listen from")
	fs.Int("delay-shutdown", 0, "Number of seconds to delay shutdown when receiving SIGTERM.")
	return func() ([]service, error) {
		var mux http.Handler = c.netexecMux(ctx, *httpPort, log)
		if *override != "" {
			inner := mux
			mux = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				req, err := http.NewRequestWithContext(r.Context(), "GET", *override, nil)
				if err != nil {
					http.Error(w, fmt.Sprintf("override request failed: %v", err), http.StatusInternalServerError)
					return
				}
				req.RemoteAddr = r.RemoteAddr
				inner.ServeHTTP(w, req)
			})
		}
		s := service{port: *httpPort, handler: mux}
		if *certFile != "" {
			var err error
			if s.tls, err = c.tlsConfig(*certFile, *keyFile); err != nil {
				return nil, err
			}
		}
		out := []service{s}
		log.printf("Started HTTP server on port %d", *httpPort)
		if *udpPort != -1 {
			out = append(out, service{port: *udpPort, udp: c.netexecUDP(*udpPort)})
			log.printf("Started UDP server on port  %d", *udpPort)
		}
		return out, nil
	}
}

// netexecMux is netexec's HTTP routes.
func (c *cmd) netexecMux(ctx context.Context, port int, log *logger) *http.ServeMux {
	host := c.p.Hostname
	mux := http.NewServeMux()
	// text answers f's text and logs "GET path", as agnhost's handlers do.
	text := func(path string, f func(r *http.Request) string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			log.printf("GET %s", path)
			fmt.Fprint(w, f(r))
		})
	}
	text("/", func(*http.Request) string { return fmt.Sprintf("NOW: %v", time.Now()) })
	text("/hostname", func(*http.Request) string { return host })
	mux.HandleFunc("/hostName", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, host) })
	text("/clientip", func(r *http.Request) string { return r.RemoteAddr })
	text("/serverport", func(*http.Request) string { return strconv.Itoa(port) })
	text("/readyz", func(*http.Request) string { return "ok" })
	mux.HandleFunc("/healthz", func(http.ResponseWriter, *http.Request) { log.printf("GET /healthz") })
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		log.printf("GET /echo?msg=%s&code=%s", r.FormValue("msg"), r.FormValue("code"))
		if code := r.FormValue("code"); code != "" {
			n, err := strconv.Atoi(code)
			if err != nil {
				fmt.Fprintf(w, "argument 'code' must be an integer or empty, got %q\n", code)
				return
			}
			w.WriteHeader(n)
		}
		fmt.Fprint(w, r.FormValue("msg"))
	})
	mux.HandleFunc("/header", func(w http.ResponseWriter, r *http.Request) {
		if key := r.FormValue("key"); key != "" {
			fmt.Fprint(w, r.Header.Get(key))
			return
		}
		writeJSON(w, r.Header)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		code := http.StatusFound
		if s := r.FormValue("code"); s != "" {
			var err error
			if code, err = strconv.Atoi(s); err != nil {
				fmt.Fprintf(w, "argument 'code' must be an integer or empty, got %q\n", s)
				return
			}
		}
		http.Redirect(w, r, r.FormValue("location"), code)
	})
	mux.HandleFunc("/dial", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		log.printf("GET /dial?host=%s&protocol=%s&port=%s&request=%s&tries=%s", q.Get("host"), q.Get("protocol"), q.Get("port"), q.Get("request"), q.Get("tries"))
		c.dialHandler(ctx, w, r)
	})
	mux.HandleFunc("/shell", func(w http.ResponseWriter, r *http.Request) { c.shellHandler(ctx, w, r) })
	return mux
}

// netexecUDP answers netexec's UDP commands: hostname, echo TEXT,
// clientip and serverport.
func (c *cmd) netexecUDP(port int) func([]byte, net.Addr) []byte {
	return func(msg []byte, from net.Addr) []byte {
		text := strings.ToLower(strings.TrimSpace(string(msg)))
		switch {
		case text == "hostname":
			return []byte(c.p.Hostname)
		case strings.HasPrefix(text, "echo "):
			return []byte(strings.SplitN(text, " ", 2)[1])
		case text == "clientip":
			return []byte(from.String())
		case text == "serverport":
			return []byte(strconv.Itoa(port))
		}
		return nil
	}
}

// dialHandler is netexec's /dial: the pod itself sends request to
// host:port over HTTP (GET /request) or UDP, tries times, and answers
// {"responses":[...]} and {"errors":[...]} as agnhost does.
func (c *cmd) dialHandler(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	request, protocol := q.Get("request"), strings.ToLower(q.Get("protocol"))
	tries := 1
	if t := q.Get("tries"); t != "" {
		var err error
		if tries, err = strconv.Atoi(t); err != nil {
			http.Error(w, fmt.Sprintf("tries parameter is invalid. %v", err), http.StatusBadRequest)
			return
		}
	}
	if request == "" {
		http.Error(w, "request parameter not specified. <nil>", http.StatusBadRequest)
		return
	}
	var dialer func(context.Context, string, string) (string, error)
	switch protocol {
	case "", "http":
		dialer = c.dialHTTP
	case "udp":
		dialer = c.dialUDP
	default:
		http.Error(w, fmt.Sprintf("unsupported protocol. %s", protocol), http.StatusBadRequest)
		return
	}
	host := q.Get("host")
	if ip := c.p.Resolve(ctx, host); host != "" && ip != nil {
		host = ip.String()
	}
	port, err := strconv.Atoi(q.Get("port"))
	if err != nil || net.ParseIP(host) == nil {
		http.Error(w, fmt.Sprintf("host and/or port param are invalid. lookup %s: no such host", q.Get("host")), http.StatusBadRequest)
		return
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	responses, errs := []string{}, []string{}
	var response string
	for range tries {
		response, err = dialer(ctx, request, addr)
		if err != nil {
			errs = append(errs, err.Error())
		} else {
			responses = append(responses, response)
		}
	}
	out := map[string][]string{}
	if len(response) > 0 { // agnhost's test: the last try's answer
		out["responses"] = responses
	}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	writeJSON(w, out)
}

// dialHTTP is /dial's HTTP try: GET http://addr/request within 5 s.
func (c *cmd) dialHTTP(ctx context.Context, request, addr string) (string, error) {
	transport := &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		return c.p.Dial(ctx, network, a, 5*time.Second)
	}}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://%s/%s", addr, request), nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// dialUDP is /dial's UDP try: request sent, the reply awaited 5 s.
func (c *cmd) dialUDP(ctx context.Context, request, addr string) (string, error) {
	conn, err := c.p.Dial(ctx, "udp", addr, 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("udp dial failed. err:%v", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(request)); err != nil {
		return "", fmt.Errorf("udp connection write failed. err:%v", err)
	}
	buf := make([]byte, 2048)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := conn.Read(buf)
	if err != nil || n == 0 {
		return "", fmt.Errorf("reading from udp connection failed. err:'%v'", err)
	}
	return string(buf[:n]), nil
}

// shellHandler is netexec's /shell: sh -c shellCommand (or cmd) run in
// the container, its output and error as JSON.
func (c *cmd) shellHandler(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	cmd := r.FormValue("shellCommand")
	if cmd == "" {
		cmd = r.FormValue("cmd")
	}
	var buf syncbuf.Buffer
	p := c.p
	p.Argv, p.Stdin, p.Stdout, p.Stderr, p.Exec = []string{"/bin/sh", "-c", cmd}, nil, &buf, &buf, true
	code, err := proc.Run(ctx, p)
	out := map[string]string{}
	if s := buf.String(); s != "" {
		out["output"] = s
	}
	switch {
	case err != nil:
		out["error"] = err.Error()
	case code != 0:
		out["error"] = fmt.Sprintf("exit status %d", code)
	}
	writeJSON(w, out)
}

// The agnhost image's certificate (for 127.0.0.1 and ::1) and key,
// porter's default pair.
const (
	imageCert = "/localhost.crt"
	imageKey  = "/localhost.key"
)

// tlsConfig serves the certificate and key of the container's files
// certFile and keyFile, or where it has none, the agnhost image's own
// (imageCert and imageKey).
func (c *cmd) tlsConfig(certFile, keyFile string) (*tls.Config, error) {
	var certPEM, keyPEM []byte
	var err error
	if certFile != "" && keyFile != "" {
		if certPEM, err = c.p.FS.ReadFile(certFile); err == nil {
			keyPEM, err = c.p.FS.ReadFile(keyFile)
		}
	}
	if certPEM == nil || keyPEM == nil { // the image's own pair (porter's default)
		if certPEM, err = c.p.FS.ReadFile(imageCert); err == nil {
			keyPEM, err = c.p.FS.ReadFile(imageKey)
		}
		if err != nil {
			return nil, err
		}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}

// writeJSON writes v as agnhost's handlers do: json.Marshal, no newline.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("response could not be serialized. %v", err), http.StatusExpectationFailed)
		return
	}
	_, _ = w.Write(b)
}
