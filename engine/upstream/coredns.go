package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"k8s.io/klog/v2"

	// The plugins the Corefile uses, registered with CoreDNS's server type
	// (as core/plugin/zplugin.go registers all of them for the coredns
	// binary).
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/template"
)

// CoreDNSConfig is what CoreDNS serves and where.
type CoreDNSConfig struct {
	// Kubeconfig is CoreDNS's identity and the API server it watches (its
	// kubernetes plugin reads it).
	Kubeconfig string
	// Listen is the address DNS is served on, UDP and TCP ("10.96.0.10:53";
	// port 0 picks one).
	Listen string
	// Also are more addresses answered on Listen's port: the kube-dns
	// endpoint's, which kube-proxy's rules lead the Service's traffic to.
	Also []string
	// Metrics, when set, is where the prometheus plugin serves /metrics
	// ("10.96.0.10:9153").
	Metrics string
	// Domain is the cluster domain ("cluster.local").
	Domain string
}

// CoreDNS is a running CoreDNS server.
type CoreDNS struct {
	instance *caddy.Instance
	stop     sync.Once
}

// startMu keeps two CoreDNS servers from starting at once: caddy's server
// types and CoreDNS's plugin setup share process-wide state (as CoreDNS's
// own test/server.go serializes its test servers).
var startMu sync.Mutex

// StartCoreDNS runs CoreDNS in this process from the Corefile cfg describes
// (see Corefile), as the coredns binary's main does (caddy.Start on a
// Corefile with its plugins registered), and returns once it answers; the
// kubernetes plugin waits up to five seconds for its first list of the
// cluster's Services and EndpointSlices. It stops when ctx ends or on
// Stop. Its logs go through the standard library's logger (engine/logs
// sends that to podtrace's log file).
func StartCoreDNS(ctx context.Context, cfg CoreDNSConfig) (*CoreDNS, error) {
	corefile, err := Corefile(cfg)
	if err != nil {
		return nil, err
	}
	startMu.Lock()
	defer startMu.Unlock()
	caddy.Quiet, dnsserver.Quiet = true, true // no start-up banner on the terminal
	instance, err := caddy.Start(caddy.CaddyfileInput{Filepath: "Corefile", Contents: []byte(corefile), ServerTypeName: "dns"})
	// The kubernetes plugin's setup routes every klog line of the process
	// through CoreDNS's logger (klog.SetLogger); the other components log
	// through klog, so give klog its own output back.
	klog.ClearLogger()
	if err != nil {
		if instance != nil {
			shutdown(instance)
		}
		return nil, fmt.Errorf("start CoreDNS: %w", err)
	}
	c := &CoreDNS{instance: instance}
	context.AfterFunc(ctx, func() { c.Stop() })
	return c, nil
}

// Addr is the address CoreDNS answers UDP queries on.
func (c *CoreDNS) Addr() net.Addr {
	for _, s := range c.instance.Servers() {
		if a := s.LocalAddr(); a != nil {
			return a
		}
	}
	return nil
}

// Stop stops serving and CoreDNS's watches.
func (c *CoreDNS) Stop() {
	c.stop.Do(func() { shutdown(c.instance) })
}

// shutdown stops an instance's servers and runs its plugins' shutdown
// callbacks (the kubernetes plugin's informers, the metrics listener), as
// caddy does on a signal.
func shutdown(i *caddy.Instance) {
	if err := i.Stop(); err != nil {
		klog.ErrorS(err, "Stopping CoreDNS")
	}
	for _, err := range i.ShutdownCallbacks() {
		klog.ErrorS(err, "Stopping CoreDNS")
	}
}

// Corefile is kubeadm's Corefile for CoreDNS (cmd/kubeadm's CoreDNS
// addon) with podtrace's differences: CoreDNS listens on cfg.Listen and
// cfg.Also only (bind) and serves metrics on cfg.Metrics; the kubernetes plugin reads
// cfg.Kubeconfig and is authoritative for the reverse zones too (no
// fallthrough: there is nothing to fall through to); and in place of
// forwarding other names to the host's resolvers, which would send queries
// off the machine, they get NXDOMAIN. No health, ready, loop or reload:
// nothing probes CoreDNS, it forwards nowhere, and its Corefile is not a
// ConfigMap.
func Corefile(cfg CoreDNSConfig) (string, error) {
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil || net.ParseIP(host) == nil {
		return "", fmt.Errorf("CoreDNS: listen address %q: want IP:port", cfg.Listen)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("CoreDNS: listen address %q: want IP:port", cfg.Listen)
	}
	for _, ip := range cfg.Also {
		if net.ParseIP(ip) == nil {
			return "", fmt.Errorf("CoreDNS: address %q: want an IP", ip)
		}
		host += " " + ip
	}
	if cfg.Kubeconfig == "" || cfg.Domain == "" {
		return "", errors.New("CoreDNS: a kubeconfig and a cluster domain are needed")
	}
	if strings.ContainsAny(cfg.Kubeconfig+cfg.Domain+cfg.Metrics, " \t\n{}\"") {
		return "", fmt.Errorf("CoreDNS: %q, %q or %q cannot be written in a Corefile", cfg.Kubeconfig, cfg.Domain, cfg.Metrics)
	}
	metrics := ""
	if cfg.Metrics != "" {
		metrics = "\n    prometheus " + cfg.Metrics
	}
	zones := cfg.Domain + " in-addr.arpa ip6.arpa"
	var b strings.Builder
	fmt.Fprintf(&b, `%[1]s {
    bind %[2]s
    errors
    kubernetes %[3]s {
        kubeconfig %[4]s
        pods insecure
        ttl 30
    }%[5]s
    cache 30 {
        disable success %[6]s
        disable denial %[6]s
    }
    loadbalance
}
.:%[7]s {
    bind %[2]s
    errors%[5]s
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`, zoneKeys(zones, port), host, zones, cfg.Kubeconfig, metrics, cfg.Domain, port)
	return b.String(), nil
}

// zoneKeys is a server block's keys for zones on port.
func zoneKeys(zones, port string) string {
	fields := strings.Fields(zones)
	for i, z := range fields {
		fields[i] = z + ":" + port
	}
	return strings.Join(fields, " ")
}
