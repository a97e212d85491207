//go:build !linux

package upstream

import (
	"context"
	"errors"
)

// KubeProxy is a running kube-proxy; outside Linux there is none.
type KubeProxy struct{}

// StartKubeProxy answers that kube-proxy's nftables mode needs Linux.
func StartKubeProxy(context.Context, KubeProxyConfig) (*KubeProxy, error) {
	return nil, errors.New("kube-proxy's nftables mode needs Linux")
}

// Stop does nothing.
func (*KubeProxy) Stop() {}

// ClaimKubeProxyTables answers that kube-proxy's nftables mode needs Linux.
func ClaimKubeProxyTables(context.Context, string) error {
	return errors.New("kube-proxy's nftables mode needs Linux")
}

// ReleaseKubeProxyTables does nothing.
func ReleaseKubeProxyTables(string) {}
