package main

import (
	"context"
	"encoding/json"
	"net"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
)

// portMapPlugin serves hostPorts: the standard plugin a kind or kubeadm
// node chains after its bridge.
const portMapPlugin = "portmap"

// hostPorts are the pod's hostPorts as this node serves them. The node's
// address is its gateway on the pods' bridge, but its loopback and the
// rest of its network are the machine's. A hostPort without a hostIP (or
// on 0.0.0.0), every address of a real node, is served on the gateway
// only, never on the machine's other addresses; one on a loopback address
// or the gateway is served there; one on any other address is not the
// node's and is not served, as on a node without that address.
func hostPorts(c *conf) []portMapping {
	gw := net.ParseIP(c.Gateway)
	var out []portMapping
	for _, m := range c.RuntimeConfig.PortMappings {
		ip := net.ParseIP(m.HostIP)
		switch {
		case (m.HostIP == "" || ip.IsUnspecified()) && gw != nil:
			m.HostIP = gw.String()
		case ip == nil, !ip.IsLoopback() && !ip.Equal(gw):
			continue
		}
		out = append(out, m)
	}
	return out
}

// portMapConf is portmap's configuration for the pod's hostPorts, with
// prev (the bridge's result) as its previous result, or nil when there
// are none.
func portMapConf(c *conf, prev types.Result) ([]byte, error) {
	ports := hostPorts(c)
	if len(ports) == 0 {
		return nil, nil
	}
	pm := map[string]any{
		"cniVersion":    c.CNIVersion,
		"name":          c.Name,
		"type":          portMapPlugin,
		"snat":          true,
		"runtimeConfig": map[string]any{"portMappings": ports},
	}
	if prev != nil {
		pm["prevResult"] = prev
	}
	return json.Marshal(pm)
}

// portMapAdd serves the pod's hostPorts, chained after the bridge whose
// result is prev, and returns the chain's result.
func portMapAdd(c *conf, prev types.Result) (types.Result, error) {
	b, err := portMapConf(c, prev)
	if b == nil || err != nil {
		return prev, err
	}
	return invoke.DelegateAdd(context.Background(), portMapPlugin, b, nil)
}

// portMapDel stops serving the pod's hostPorts (containerd passes them
// again on DEL).
func portMapDel(c *conf) error {
	b, err := portMapConf(c, nil)
	if b == nil || err != nil {
		return err
	}
	return invoke.DelegateDel(context.Background(), portMapPlugin, b, nil)
}
