package cni

import (
	"context"
	"encoding/json"
	"fmt"
	"net"

	"github.com/containernetworking/cni/libcni"

	"github.com/podtrace/podtrace/engine/kubelet/network"
	"github.com/podtrace/podtrace/engine/kubelet/network/cni/netns"
)

// SetUpFault runs a real CNI ADD that fails: with variant
// "ipam-exhausted" (the default) host-local gets a range whose only
// address is the gateway's; with "plugin-error" the network names an IPAM
// plugin that does not exist. Whatever the plugin allocated is released.
func (p *Plugin) SetUpFault(ctx context.Context, pod network.Pod, variant string) error {
	ns, err := p.cfg.NetNSPath(pod.SandboxID)
	if err != nil {
		return err
	}
	_, ipnet, _ := net.ParseCIDR(p.cfg.PodCIDR)
	gw := make(net.IP, len(ipnet.IP.To4()))
	copy(gw, ipnet.IP.To4())
	gw[3]++
	ipam := map[string]any{"type": "host-local", "dataDir": p.ipamDir,
		"ranges": [][]map[string]string{{{"subnet": p.cfg.PodCIDR, "rangeStart": gw.String(), "rangeEnd": gw.String()}}}}
	if variant == "plugin-error" {
		ipam = map[string]any{"type": "podtrace-missing-ipam"}
	}
	raw, _ := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": p.NetworkName() + "-fault",
		"plugins": []any{map[string]any{"type": "bridge", "bridge": "cni0", "isGateway": true, "ipam": ipam}}})
	list, err := libcni.NetworkConfFromBytes(raw)
	if err != nil {
		return err
	}
	rt := p.runtimeConf(pod, ns)
	err = netns.Do(p.nodeNS, func() error {
		_, err := p.cni.AddNetworkList(ctx, list, rt)
		if err != nil {
			_ = p.cni.DelNetworkList(ctx, list, rt)
		}
		return err
	})
	if err == nil {
		_ = netns.Do(p.nodeNS, func() error { return p.cni.DelNetworkList(ctx, list, rt) })
		return fmt.Errorf("cni fault: ADD succeeded")
	}
	return fmt.Errorf("plugin type=%q failed (add): %w", "bridge", err)
}
