package proc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// curlOptions are the options of curl (8.x) that the simulation reads.
// -q, -g, -v, --compressed and --interface (every address is the same
// namespace's) are accepted and ignored.
type curlOptions struct {
	silent, showError, fail, follow, insecure, head bool
	connectTimeout, maxTime                         time.Duration
	output, writeOut, method                        string
	headers                                         http.Header
	urls                                            []string
}

// curlValued are the options that take a value, by long name, and the
// short letters' long names.
var (
	curlValued = map[string]bool{"connect-timeout": true, "max-time": true, "output": true, "write-out": true,
		"request": true, "header": true, "user-agent": true, "data": true, "interface": true}
	curlShort = map[byte]string{'s': "silent", 'S': "show-error", 'f': "fail", 'L': "location", 'k': "insecure",
		'I': "head", 'm': "max-time", 'o': "output", 'w': "write-out", 'X': "request", 'H': "header", 'A': "user-agent",
		'd': "data", 'q': "disable", 'g': "globoff", 'v': "verbose", 'i': "include"}
)

// parseCurl reads curl's arguments; it returns what to print and exit 2
// with, if they are wrong.
func parseCurl(args []string) (o curlOptions, fault string) {
	o = curlOptions{headers: http.Header{}, connectTimeout: 300 * time.Second}
	set := func(name, v string) string {
		seconds := func() (time.Duration, bool) {
			f, err := strconv.ParseFloat(v, 64)
			return time.Duration(f * float64(time.Second)), err == nil && f >= 0
		}
		var ok = true
		switch name {
		case "silent":
			o.silent = true
		case "show-error":
			o.showError = true
		case "fail":
			o.fail = true
		case "location":
			o.follow = true
		case "insecure":
			o.insecure = true
		case "head":
			o.head = true
		case "connect-timeout":
			o.connectTimeout, ok = seconds()
		case "max-time":
			o.maxTime, ok = seconds()
		case "output":
			o.output = v
		case "write-out":
			o.writeOut = v
		case "request":
			o.method = v
		case "header":
			k, val, _ := strings.Cut(v, ":")
			o.headers.Add(strings.TrimSpace(k), strings.TrimSpace(val))
		case "user-agent":
			o.headers.Set("User-Agent", v)
		case "disable", "globoff", "verbose", "include", "compressed", "data", "interface":
		default:
			return fmt.Sprintf("curl: option --%s: is unknown\n", name)
		}
		if !ok {
			return fmt.Sprintf("curl: option --%s: expected a proper numerical parameter\n", name)
		}
		return ""
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		var names []string
		switch {
		case strings.HasPrefix(a, "--") && len(a) > 2:
			names = []string{a[2:]}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				n, ok := curlShort[a[j]]
				if !ok {
					return o, fmt.Sprintf("curl: option -%c: is unknown\n", a[j])
				}
				if curlValued[n] && j+1 < len(a) { // -m5: the rest of the word is the value
					if f := set(n, a[j+1:]); f != "" {
						return o, f
					}
					break
				}
				names = append(names, n)
			}
		default:
			o.urls = append(o.urls, a)
			continue
		}
		for _, n := range names {
			v := ""
			if curlValued[n] {
				if i+1 >= len(args) {
					return o, fmt.Sprintf("curl: option %s: requires parameter\n", a)
				}
				i++
				v = args[i]
			}
			if f := set(n, v); f != "" {
				return o, f
			}
		}
	}
	if len(o.urls) == 0 {
		return o, "curl: no URL specified\n"
	}
	return o, ""
}

// curlError is a failed transfer: curl's exit code and message.
type curlError struct {
	code int
	msg  string
}

func (e *curlError) Error() string { return fmt.Sprintf("curl: (%d) %s", e.code, e.msg) }

// curl is curl as the conformance specs call it (agnhost's image has
// it): a GET of each URL (http:// when no scheme is given) from the pod
// network namespace, the host found by the container's resolver, the
// body on stdout or in -o's file. Failures exit with curl's codes (6, 7,
// 22 with -f, 28) and say so on stderr unless -s without -S.
func (c *commands) curl(ctx context.Context, hc interp.HandlerContext, args []string) error {
	o, fault := parseCurl(args)
	if fault != "" {
		fmt.Fprint(hc.Stderr, fault+"curl: try 'curl --help' or 'curl --manual' for more information\n")
		return interp.ExitStatus(2)
	}
	for _, raw := range o.urls {
		if err := c.curlOne(ctx, hc, o, raw); err != nil {
			var ce *curlError
			if !errors.As(err, &ce) {
				return err
			}
			if !o.silent || o.showError {
				fmt.Fprintln(hc.Stderr, ce.Error())
			}
			return interp.ExitStatus(uint8(ce.code))
		}
	}
	return nil
}

// curlOne fetches one URL.
func (c *commands) curlOne(ctx context.Context, hc interp.HandlerContext, o curlOptions, raw string) error {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return &curlError{3, "URL rejected: Malformed input to a URL function"}
	}
	if o.maxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.maxTime)
		defer cancel()
	}
	start := time.Now()
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: o.insecure},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, _ := net.SplitHostPort(addr)
			ip := c.resolve(ctx, host)
			if ip == nil {
				return nil, &curlError{6, "Could not resolve host: " + host}
			}
			conn, err := c.p.Dial(ctx, network, net.JoinHostPort(ip.String(), port), o.connectTimeout)
			if err != nil {
				ms := time.Since(start).Milliseconds()
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					return nil, &curlError{28, fmt.Sprintf("Failed to connect to %s port %s after %d ms: Timeout was reached", host, port, ms)}
				}
				return nil, &curlError{7, fmt.Sprintf("Failed to connect to %s port %s after %d ms: Couldn't connect to server", host, port, ms)}
			}
			return conn, nil
		}}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	if !o.follow {
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	method := o.method
	if method == "" {
		method = map[bool]string{true: "HEAD", false: "GET"}[o.head]
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return &curlError{3, "URL rejected: Malformed input to a URL function"}
	}
	req.Header = o.headers.Clone()
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "curl/7.88.1")
	}
	resp, err := client.Do(req)
	if err != nil {
		var ce *curlError
		switch {
		case errors.As(err, &ce):
			return ce
		case ctx.Err() != nil && o.maxTime > 0:
			return &curlError{28, fmt.Sprintf("Operation timed out after %d milliseconds with 0 bytes received", time.Since(start).Milliseconds())}
		}
		return &curlError{56, "Recv failure: " + errnoText(err)}
	}
	defer resp.Body.Close()
	if o.fail && resp.StatusCode >= 400 {
		return &curlError{22, fmt.Sprintf("The requested URL returned error: %d", resp.StatusCode)}
	}
	out := hc.Stdout
	if o.output != "" && o.output != "-" {
		f, err := c.p.FS.Open(abs(hc.Dir, o.output), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return &curlError{23, "Failure writing output to destination"}
		}
		defer f.Close()
		out = f
	}
	n, err := io.Copy(out, resp.Body)
	if err != nil && ctx.Err() != nil {
		return &curlError{28, fmt.Sprintf("Operation timed out after %d milliseconds with %d bytes received", time.Since(start).Milliseconds(), n)}
	}
	if o.writeOut != "" {
		fmt.Fprint(hc.Stdout, strings.NewReplacer("%{http_code}", strconv.Itoa(resp.StatusCode), `\n`, "\n").Replace(o.writeOut))
	}
	return nil
}
