package pki

import (
	"fmt"

	kubeadmconstants "k8s.io/kubernetes/cmd/kubeadm/app/constants"
)

// File names of the aggregation layer's pairs: kubeadm's front-proxy-ca
// and front-proxy-client.
const (
	FrontProxyCACertFile     = kubeadmconstants.FrontProxyCACertName
	FrontProxyCAKeyFile      = kubeadmconstants.FrontProxyCAKeyName
	FrontProxyClientCertFile = kubeadmconstants.FrontProxyClientCertName
	FrontProxyClientKeyFile  = kubeadmconstants.FrontProxyClientKeyName
)

// FrontProxyClientUser is the common name of kube-apiserver's client pair
// for the extension API servers it proxies to, the one name they accept
// request headers from (--requestheader-allowed-names): kubeadm's.
const FrontProxyClientUser = kubeadmconstants.FrontProxyClientCertCommonName

// EnsureFrontProxy makes sure the aggregation layer's CA and
// kube-apiserver's client pair signed by it exist, as kubeadm makes them:
// kube-apiserver proxies a request for an aggregated API (an APIService)
// with that pair and the user in X-Remote-User headers, and the extension
// API server trusts those headers from that CA alone (the
// extension-apiserver-authentication ConfigMap's requestheader-client-ca-file).
// A CA of its own, so that no cluster client certificate can assert
// headers.
func (b *Bundle) EnsureFrontProxy() error {
	fp := &Bundle{Dir: b.Dir, now: b.now}
	if err := fp.ensureCA(FrontProxyCACertFile, FrontProxyCAKeyFile, kubeadmconstants.FrontProxyCACertAndKeyBaseName); err != nil {
		return fmt.Errorf("ensure front-proxy ca: %w", err)
	}
	if _, _, err := fp.ensureLeaf(FrontProxyClientCertFile, FrontProxyClientKeyFile, func() ([]byte, []byte, error) {
		return fp.IssueClient(FrontProxyClientUser, nil)
	}, false); err != nil {
		return fmt.Errorf("ensure front-proxy client cert: %w", err)
	}
	return nil
}
