package containerd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/errdefs"

	"github.com/podtrace/podtrace/engine/kubelet/network/cni/netns"
	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// The kubelet may use these methods (through small interfaces of its own)
// so that faults act on the real parts instead of returning canned errors.

// PullFault pulls image for real from a place where it is not: the
// loopback registry answers 404 (variant "not-found", the default) or 401
// ("unauthorized"), or a closed loopback port refuses the connection
// ("unreachable"). The error is containerd's own.
func (r *Runtime) PullFault(ctx context.Context, image, variant string) error {
	var res remotes.Resolver
	hc := &http.Client{Transport: docker.DefaultHTTPTransport(nil), Timeout: 10 * time.Second}
	host, path := r.cfg.Registry, "/v2/podtrace-missing"
	switch variant {
	case "unauthorized":
		hc.Transport = roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusUnauthorized, Status: "401 Unauthorized", Request: req,
				Header: http.Header{"Content-Type": {"application/json"}},
				Body:   http.NoBody}, nil
		})
	case "unreachable":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		host = ln.Addr().String()
		ln.Close() // nothing listens there any more
		path = "/v2"
	}
	res = docker.NewResolver(docker.ResolverOptions{Hosts: func(domain string) ([]docker.RegistryHost, error) {
		return []docker.RegistryHost{{Client: hc, Host: host, Scheme: "http", Path: path + "/" + domain,
			Capabilities: docker.HostCapabilityPull | docker.HostCapabilityResolve}}, nil
	}})
	_, err := r.c.Pull(r.ctx(ctx), image, client.WithPullUnpack, client.WithResolver(res), client.WithPullSnapshotter(r.cfg.Snapshotter))
	if err == nil {
		return fmt.Errorf("pull fault: %s was pulled", image)
	}
	code := "Unknown"
	if errdefs.IsNotFound(err) {
		code = "NotFound"
	}
	return fmt.Errorf("rpc error: code = %s desc = failed to pull and unpack image %q: %w", code, image, err)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// HookFault runs a real exec in the container that exits 1 (sh -c "exit
// 1" where the image has a shell; demo's "fail" mode in the demo image).
func (r *Runtime) HookFault(ctx context.Context, containerID string) (cmd []string, res runtime.ExecResult, err error) {
	cmd = []string{"sh", "-c", "exit 1"}
	if c, cerr := r.container(containerID); cerr == nil && strings.HasPrefix(c.cfg.Image, "podtrace.dev/demo:") {
		cmd = []string{"/demo", "fail", "postStart hook failed on purpose"}
	}
	res, err = r.ExecSync(ctx, containerID, cmd, 30*time.Second)
	return cmd, res, err
}

// HTTPGet performs an HTTP GET of url from inside the sandbox's network
// namespace, as the kubelet's HTTP prober does against the pod IP, and
// returns the status code.
func (r *Runtime) HTTPGet(ctx context.Context, sandboxID, url string, timeout time.Duration) (int, error) {
	ns, err := r.NetNSPath(sandboxID)
	if err != nil {
		return 0, err
	}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, nw, addr string) (net.Conn, error) {
		var c net.Conn
		err := netns.Do(ns, func() error {
			var err error
			c, err = (&net.Dialer{Timeout: timeout}).DialContext(ctx, nw, addr)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", "kube-probe/1.36")
	resp, err := (&http.Client{Transport: tr, Timeout: timeout}).Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
