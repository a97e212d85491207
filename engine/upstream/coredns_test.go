package upstream_test

import (
	"strings"
	"testing"

	"github.com/podtrace/podtrace/engine/upstream"
)

func TestCorefile(t *testing.T) {
	want := `cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
    bind 10.96.0.10
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig /data/coredns.kubeconfig
        pods insecure
        ttl 30
    }
    prometheus 10.96.0.10:9153
    cache 30 {
        disable success cluster.local
        disable denial cluster.local
    }
    loadbalance
}
.:53 {
    bind 10.96.0.10
    errors
    prometheus 10.96.0.10:9153
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`
	for _, tc := range []struct {
		cfg  upstream.CoreDNSConfig
		want string // the Corefile, or the error's text
	}{
		{upstream.CoreDNSConfig{Kubeconfig: "/data/coredns.kubeconfig", Listen: "10.96.0.10:53", Metrics: "10.96.0.10:9153",
			Domain: "cluster.local"}, want},
		{upstream.CoreDNSConfig{Kubeconfig: "/k", Listen: "10.96.0.10", Domain: "cluster.local"},
			`CoreDNS: listen address "10.96.0.10": want IP:port`},
		{upstream.CoreDNSConfig{Kubeconfig: "/k", Listen: "dns:53", Domain: "cluster.local"}, `CoreDNS: listen address "dns:53": want IP:port`},
		{upstream.CoreDNSConfig{Listen: "10.96.0.10:53", Domain: "cluster.local"}, "CoreDNS: a kubeconfig and a cluster domain are needed"},
		{upstream.CoreDNSConfig{Kubeconfig: "/my dir/k", Listen: "10.96.0.10:53", Domain: "cluster.local"},
			`CoreDNS: "/my dir/k", "cluster.local" or "" cannot be written in a Corefile`},
	} {
		got, err := upstream.Corefile(tc.cfg)
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%+v:\n%s\nwant:\n%s", tc.cfg, got, tc.want)
		}
	}
	// Also's addresses are bound beside Listen's, in both server blocks.
	got, _ := upstream.Corefile(upstream.CoreDNSConfig{Kubeconfig: "/k", Listen: "10.96.0.10:53", Also: []string{"172.18.0.1"}, Domain: "cluster.local"})
	if strings.Count(got, "bind 10.96.0.10 172.18.0.1\n") != 2 {
		t.Errorf("the Corefile does not bind 10.96.0.10 and 172.18.0.1 in both blocks:\n%s", got)
	}
	if _, err := upstream.Corefile(upstream.CoreDNSConfig{Kubeconfig: "/k", Listen: "10.96.0.10:53", Also: []string{"dns"}, Domain: "cluster.local"}); err == nil {
		t.Error("Also names no address, and the Corefile was written")
	}
	// No server block forwards: nothing leaves the machine.
	if got, _ := upstream.Corefile(upstream.CoreDNSConfig{Kubeconfig: "/k", Listen: "10.96.0.10:53", Domain: "cluster.local"}); strings.Contains(got, "forward") {
		t.Errorf("the Corefile forwards:\n%s", got)
	}
}
