package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// wgetOptions are the options of busybox's wget that the simulation reads.
type wgetOptions struct {
	quiet, spider bool
	output        string // -O; "" for the URL's file name, "-" for stdout
	agent         string
	headers       http.Header
	timeout       time.Duration
	urls          []string
	post          bool   // --post-data or --post-file: a POST of postData
	postData      string // --post-data's value, or --post-file's name
	postFile      bool
}

const wgetUsage = "Usage: wget [-cqS] [--spider] [-O FILE] [-o LOGFILE] [--header STR]\n" +
	"\t[--post-data STR | --post-file FILE] [-Y on/off]\n\t[--no-check-certificate] [-P DIR] [-U AGENT] [-T SEC] URL...\n\n" +
	"Retrieve files via HTTP or FTP\n"

// wgetLong maps wget's long options to their short letters (a control
// character for those without one); wgetValued are the letters that take a value.
var wgetLong = map[string]byte{"quiet": 'q', "server-response": 'S', "continue": 'c', "output-document": 'O',
	"user-agent": 'U', "timeout": 'T', "output-file": 'o', "directory-prefix": 'P', "proxy": 'Y',
	"spider": 1, "header": 2, "post-data": 3, "post-file": 4, "no-check-certificate": 5}

const wgetValued = "OUToPY\x02\x03\x04"

// parseWget reads wget's arguments; false means a usage error.
func parseWget(args []string) (wgetOptions, bool) {
	o := wgetOptions{agent: "Wget", headers: http.Header{}, timeout: 900 * time.Second}
	set := func(letter byte, v string) bool {
		switch letter {
		case 'q':
			o.quiet = true
		case 1:
			o.spider = true
		case 'O':
			o.output = v
		case 'U':
			o.agent = v
		case 2:
			k, val, _ := strings.Cut(v, ":")
			o.headers.Add(strings.TrimSpace(k), strings.TrimSpace(val))
		case 'T':
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return false
			}
			o.timeout = time.Duration(n) * time.Second
		case 3, 4:
			o.post, o.postData, o.postFile = true, v, letter == 4
		case 'S', 'c', 'o', 'P', 'Y', 5:
		default:
			return false
		}
		return true
	}
	for len(args) > 0 {
		a := args[0]
		args = args[1:]
		switch {
		case a == "--":
			o.urls, args = append(o.urls, args...), nil
		case strings.HasPrefix(a, "--"):
			name, v, hasVal := strings.Cut(a[2:], "=")
			letter, ok := wgetLong[name]
			if ok && strings.IndexByte(wgetValued, letter) >= 0 && !hasVal {
				if len(args) == 0 {
					return o, false
				}
				v, args = args[0], args[1:]
			}
			if !ok || !set(letter, v) {
				return o, false
			}
		case strings.HasPrefix(a, "-") && a != "-":
			for i := 1; i < len(a); i++ { // -qO- and -q -O -: letters, the last may take a value
				letter, v := a[i], ""
				if strings.IndexByte(wgetValued, letter) >= 0 {
					if v = a[i+1:]; v == "" {
						if len(args) == 0 {
							return o, false
						}
						v, args = args[0], args[1:]
					}
					i = len(a)
				}
				if !set(letter, v) {
					return o, false
				}
			}
		default:
			o.urls = append(o.urls, a)
		}
	}
	return o, len(o.urls) > 0
}

// wget is busybox's (1.36): an HTTP GET of each URL, through a real TCP
// connection from the pod network namespace, the host found as the
// container's resolver finds it (/etc/hosts, then the cluster's DNS); the
// body goes to -O's file, stdout for -O -, or the URL's file name. Its
// messages are busybox's; the first failure ends it with status 1.
func (c *commands) wget(ctx context.Context, hc interp.HandlerContext, args []string) error {
	o, ok := parseWget(args)
	if !ok {
		fmt.Fprint(hc.Stderr, wgetUsage)
		return interp.ExitStatus(1)
	}
	for _, raw := range o.urls {
		if err := c.get(ctx, hc, o, raw); err != nil {
			fmt.Fprintf(hc.Stderr, "wget: %v\n", err)
			return interp.ExitStatus(1)
		}
	}
	return nil
}

// get fetches one URL as wget does.
func (c *commands) get(ctx context.Context, hc interp.HandlerContext, o wgetOptions, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		if !strings.Contains(raw, "://") {
			u, err = url.Parse("http://" + raw)
		}
		if err != nil || u.Host == "" {
			return fmt.Errorf("bad address '%s'", raw)
		}
	}
	if u.Scheme != "http" {
		return fmt.Errorf("not an http or ftp url: %s", raw)
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return c.connect(ctx, hc, o, addr)
		}}}
	req, err := c.wgetRequest(ctx, hc, o, u)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return wgetError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("server returned error: HTTP/%d.%d %s", resp.ProtoMajor, resp.ProtoMinor, resp.Status)
	}
	if o.spider {
		if !o.quiet {
			fmt.Fprintln(hc.Stderr, "remote file exists")
		}
		return nil
	}
	return c.save(hc, o, u, resp.Body)
}

// wgetRequest is wget's request for u: a GET, or with --post-data (or
// --post-file's contents) a POST of it as a form unless --header gave
// another Content-Type, as busybox sends.
func (c *commands) wgetRequest(ctx context.Context, hc interp.HandlerContext, o wgetOptions, u *url.URL) (*http.Request, error) {
	method, body := http.MethodGet, io.Reader(nil)
	if o.post {
		data := []byte(o.postData)
		if o.postFile {
			var err error
			if data, err = c.p.FS.ReadFile(abs(hc.Dir, o.postData)); err != nil {
				return nil, fmt.Errorf("can't open '%s': %s", o.postData, Reason(err))
			}
		}
		method, body = http.MethodPost, bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	req.Header = o.headers.Clone()
	req.Header.Set("User-Agent", o.agent)
	if o.post && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req, nil
}

// connect resolves addr's host and dials it, saying so unless quiet.
func (c *commands) connect(ctx context.Context, hc interp.HandlerContext, o wgetOptions, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip := c.resolve(ctx, host)
	if ip == nil {
		return nil, wgetFailure(fmt.Sprintf("bad address '%s'", host))
	}
	target := net.JoinHostPort(ip.String(), port)
	if !o.quiet {
		fmt.Fprintf(hc.Stderr, "Connecting to %s (%s)\n", host, target)
	}
	conn, err := c.p.Dial(ctx, "tcp", target, o.timeout)
	if err != nil {
		return nil, wgetFailure(fmt.Sprintf("can't connect to remote host (%s): %s", ip, errnoText(err)))
	}
	return conn, nil
}

// resolve is host's IPv4 address, as the container's resolver finds it
// (/etc/hosts, then the cluster's DNS), or nil; an address is itself.
func (c *commands) resolve(ctx context.Context, host string) net.IP {
	if ip := net.ParseIP(host); ip != nil {
		return ip
	}
	addrs, _ := musl{c: c, conf: readResolvConf(c.p.FS)}.lookup(ctx, host, inet)
	if len(addrs) == 0 {
		return nil
	}
	return addrs[0]
}

// wgetFailure is a message of wget's own, passed up through net/http.
type wgetFailure string

func (f wgetFailure) Error() string { return string(f) }

// wgetError is wget's message for a failed request.
func wgetError(ctx context.Context, err error) error {
	var f wgetFailure
	switch {
	case errors.As(err, &f):
		return f
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return errors.New("download timed out")
	}
	return err
}

// save writes the body where -O says, or to the URL's file name in the
// working directory, with wget's messages unless quiet.
func (c *commands) save(hc interp.HandlerContext, o wgetOptions, u *url.URL, body io.Reader) error {
	if o.output == "-" {
		if !o.quiet {
			fmt.Fprintln(hc.Stderr, "writing to stdout")
		}
		if _, err := io.Copy(hc.Stdout, body); err != nil {
			return err
		}
		if !o.quiet {
			fmt.Fprintln(hc.Stderr, "written to stdout")
		}
		return nil
	}
	name := o.output
	if name == "" {
		if name = path.Base(u.Path); name == "/" || name == "." || name == "" {
			name = "index.html"
		}
	}
	w, err := c.p.FS.Open(abs(hc.Dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("can't open '%s': %s", name, Reason(err))
	}
	defer w.Close()
	if !o.quiet {
		fmt.Fprintf(hc.Stderr, "saving to '%s'\n", name)
	}
	if _, err := io.Copy(w, body); err != nil {
		return err
	}
	if !o.quiet {
		fmt.Fprintf(hc.Stderr, "'%s' saved\n", name)
	}
	return nil
}
