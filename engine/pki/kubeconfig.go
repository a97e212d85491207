package pki

import (
	"errors"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Names used in the kubeconfig podtrace writes.
const (
	// ClusterName names the embedded cluster in kubeconfigs.
	ClusterName = "podtrace"
	// AdminContext is the kubeconfig context of kubernetes-admin (current).
	AdminContext = "podtrace-admin"
	// ViewerContext is the kubeconfig context of the read-only viewer.
	ViewerContext = "podtrace-viewer"
	// ViewerNamespace is the namespace the viewer may read.
	ViewerNamespace = "default"
)

// KubeconfigUser is one user of a kubeconfig and the context that uses it.
// Credentials are a client certificate and key, a bearer token, or both.
type KubeconfigUser struct {
	// Name is the kubeconfig user entry's name.
	Name string
	// Context is the name of the context pairing this user with the cluster.
	Context string
	// Namespace is the context's default namespace (empty: none).
	Namespace string
	// CertPEM and KeyPEM are embedded as client-certificate-data/client-key-data.
	CertPEM, KeyPEM []byte
	// Token is embedded as the bearer token.
	Token string
}

// Kubeconfig builds a kubeconfig with one cluster (ClusterName at server,
// trusting caPEM) and one context per user; current names the current
// context.
func Kubeconfig(server string, caPEM []byte, current string, users ...KubeconfigUser) (*clientcmdapi.Config, error) {
	if server == "" {
		return nil, errors.New("kubeconfig: empty server URL")
	}
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = server
	cluster.CertificateAuthorityData = caPEM
	cfg.Clusters[ClusterName] = cluster
	for _, u := range users {
		if u.Name == "" || u.Context == "" {
			return nil, fmt.Errorf("kubeconfig: user %q needs a name and a context", u.Name)
		}
		if len(u.CertPEM) == 0 && u.Token == "" {
			return nil, fmt.Errorf("kubeconfig: user %q has no credentials", u.Name)
		}
		auth := clientcmdapi.NewAuthInfo()
		auth.ClientCertificateData = u.CertPEM
		auth.ClientKeyData = u.KeyPEM
		auth.Token = u.Token
		cfg.AuthInfos[u.Name] = auth
		ctx := clientcmdapi.NewContext()
		ctx.Cluster = ClusterName
		ctx.AuthInfo = u.Name
		ctx.Namespace = u.Namespace
		cfg.Contexts[u.Context] = ctx
	}
	if _, ok := cfg.Contexts[current]; !ok {
		return nil, fmt.Errorf("kubeconfig: current context %q is not among the users' contexts", current)
	}
	cfg.CurrentContext = current
	return cfg, nil
}

// WriteKubeconfig builds a kubeconfig as Kubeconfig does and writes it to
// path (mode 0600) with clientcmd.
func WriteKubeconfig(path, server string, caPEM []byte, current string, users ...KubeconfigUser) error {
	cfg, err := Kubeconfig(server, caPEM, current, users...)
	if err != nil {
		return err
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// DefaultUsers returns the admin user (context AdminContext) and the viewer
// user (context ViewerContext, namespace ViewerNamespace) with the bundle's
// client certificates.
func (b *Bundle) DefaultUsers() []KubeconfigUser {
	return []KubeconfigUser{
		{Name: AdminUser, Context: AdminContext, CertPEM: b.AdminCertPEM, KeyPEM: b.AdminKeyPEM},
		{Name: ViewerUser, Context: ViewerContext, Namespace: ViewerNamespace, CertPEM: b.ViewerCertPEM, KeyPEM: b.ViewerKeyPEM},
	}
}

// WriteKubeconfig writes podtrace's kubeconfig for the server URL: the admin
// context (current) and the viewer context.
func (b *Bundle) WriteKubeconfig(path, server string) error {
	return WriteKubeconfig(path, server, b.CAPEM, AdminContext, b.DefaultUsers()...)
}
