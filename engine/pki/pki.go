// Package pki creates and reuses the certificates of the embedded API server,
// signed as kubeadm signs them (its pkiutil):
// a cluster CA, a loopback serving certificate and client certificates for
// the admin and the limited viewer user. Everything lives as PEM files in one
// directory, so a cluster started with the same data directory keeps its
// identity (and its kubeconfig stays valid) across restarts.
package pki

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	kubeadmapi "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm"
	kubeadmapiv1 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	"k8s.io/kubernetes/cmd/kubeadm/app/util/pkiutil"
)

// File names inside the directory given to Ensure.
const (
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	ServingCertFile = "apiserver.crt"
	ServingKeyFile  = "apiserver.key"
	AdminCertFile   = "admin.crt"
	AdminKeyFile    = "admin.key"
	ViewerCertFile  = "viewer.crt"
	ViewerKeyFile   = "viewer.key"
)

// Identities carried by the generated client certificates.
const (
	// AdminUser is the common name of the admin client certificate.
	AdminUser = "kubernetes-admin"
	// MastersGroup is the organization of the admin certificate; the API
	// server lets this group do anything.
	MastersGroup = "system:masters"
	// ViewerUser is the common name of the limited client certificate.
	ViewerUser = "viewer"
)

// Validity periods, as kubeadm uses them: ten years for the CA, one year for
// leaf certificates. A leaf closer than renewBefore to its end is reissued.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

// ServingDNSNames and ServingIPs are the names and addresses in
// kube-apiserver's serving certificate (servingAltNames).
var ServingDNSNames, ServingIPs = servingAltNames()

// servingAltNames are kubeadm's names for kube-apiserver's serving
// certificate (pkiutil.GetAPIServerAltNames: kubernetes,
// kubernetes.default, kubernetes.default.svc,
// kubernetes.default.svc.cluster.local and the kubernetes Service's
// ClusterIP, 10.96.0.1, which in-cluster clients dial), with loopback as
// the advertise address and localhost and ::1 as extra SANs: kubectl on
// this machine dials 127.0.0.1.
func servingAltNames() ([]string, []net.IP) {
	cfg := &kubeadmapi.InitConfiguration{
		LocalAPIEndpoint: kubeadmapi.APIEndpoint{AdvertiseAddress: "127.0.0.1"},
		ClusterConfiguration: kubeadmapi.ClusterConfiguration{
			Networking: kubeadmapi.Networking{ServiceSubnet: kubeadmapiv1.DefaultServicesSubnet, DNSDomain: kubeadmapiv1.DefaultServiceDNSDomain},
			APIServer:  kubeadmapi.APIServer{CertSANs: []string{"localhost", "::1"}},
		},
	}
	alt, err := pkiutil.GetAPIServerAltNames(cfg)
	if err != nil {
		panic(err) // constant input
	}
	return alt.DNSNames, alt.IPs
}

// Bundle is the cluster's PKI as loaded or created by Ensure.
type Bundle struct {
	// Dir is the directory holding every file.
	Dir string
	// CAPEM is the CA certificate in PEM form (for kubeconfigs and clients).
	CAPEM []byte
	// AdminCertPEM and AdminKeyPEM are the kubernetes-admin credentials.
	AdminCertPEM, AdminKeyPEM []byte
	// ViewerCertPEM and ViewerKeyPEM are the viewer credentials.
	ViewerCertPEM, ViewerKeyPEM []byte

	caCert  *x509.Certificate
	caKey   crypto.Signer
	serving tls.Certificate
	// servingIPs are the serving certificate's addresses.
	servingIPs []net.IP
	now        func() time.Time
}

// Ensure loads the PKI from dir, creating dir and whatever is missing or
// about to expire. The CA is created once and never replaced while its files
// exist, so certificates issued earlier stay valid. The serving certificate
// also names advertise, kube-apiserver's advertised addresses (the
// kubernetes Service's endpoints, which its OpenID discovery document
// names), as kubeadm's does.
func Ensure(dir string, advertise ...net.IP) (*Bundle, error) {
	return ensure(dir, time.Now, advertise...)
}

func ensure(dir string, now func() time.Time, advertise ...net.IP) (*Bundle, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pki dir: %w", err)
	}
	b := &Bundle{Dir: dir, now: now, servingIPs: append(slices.Clone(ServingIPs), advertise...)}
	if err := b.ensureCA(CACertFile, CAKeyFile, "podtrace-ca"); err != nil {
		return nil, fmt.Errorf("ensure ca: %w", err)
	}
	servingCert, servingKey, err := b.ensureLeaf(ServingCertFile, ServingKeyFile, func() ([]byte, []byte, error) {
		return b.issue(pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, ServingDNSNames, b.servingIPs)
	}, true)
	if err != nil {
		return nil, fmt.Errorf("ensure serving cert: %w", err)
	}
	b.serving, err = tls.X509KeyPair(servingCert, servingKey)
	if err != nil {
		return nil, fmt.Errorf("load serving cert: %w", err)
	}
	b.AdminCertPEM, b.AdminKeyPEM, err = b.ensureLeaf(AdminCertFile, AdminKeyFile, func() ([]byte, []byte, error) {
		return b.IssueClient(AdminUser, []string{MastersGroup})
	}, false)
	if err != nil {
		return nil, fmt.Errorf("ensure admin cert: %w", err)
	}
	b.ViewerCertPEM, b.ViewerKeyPEM, err = b.ensureLeaf(ViewerCertFile, ViewerKeyFile, func() ([]byte, []byte, error) {
		return b.IssueClient(ViewerUser, nil)
	}, false)
	if err != nil {
		return nil, fmt.Errorf("ensure viewer cert: %w", err)
	}
	return b, nil
}

// Path returns the absolute path of one of the bundle's files.
func (b *Bundle) Path(name string) string { return filepath.Join(b.Dir, name) }

// CACert returns the parsed CA certificate.
func (b *Bundle) CACert() *x509.Certificate { return b.caCert }

// ServingCert returns the API server's serving certificate and key.
func (b *Bundle) ServingCert() tls.Certificate { return b.serving }

// ClientCertPool returns a pool holding only the cluster CA, for verifying
// client certificates and for clients verifying the server.
func (b *Bundle) ClientCertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(b.caCert)
	return pool
}

// ServerTLSConfig returns the TLS configuration of the API server's listener.
// Like kube-apiserver it requests, but does not require or verify, a client
// certificate: verification is the x509 authenticator's job, so a bad
// certificate becomes a 401 rather than a failed handshake.
func (b *Bundle) ServerTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{b.serving},
		ClientAuth:   tls.RequestClientCert,
		NextProtos:   []string{"h2", "http/1.1"},
	}
}

// IssueClient signs a new client certificate for user cn with groups orgs,
// returning the certificate and its private key in PEM form.
func (b *Bundle) IssueClient(cn string, orgs []string) (certPEM, keyPEM []byte, err error) {
	if cn == "" {
		return nil, nil, errors.New("issue client cert: empty common name")
	}
	return b.issue(pkix.Name{CommonName: cn, Organization: orgs}, x509.ExtKeyUsageClientAuth, nil, nil)
}

// IssueKubeletServing signs a serving certificate for the kubelet API
// server of node, as a kubelet's serving CSR asks for it: subject
// system:node:<node> in system:nodes, the node name and ips as its names.
// It is kept in memory only.
func (b *Bundle) IssueKubeletServing(node string, ips ...net.IP) (tls.Certificate, error) {
	if node == "" {
		return tls.Certificate{}, errors.New("issue kubelet serving cert: empty node name")
	}
	certPEM, keyPEM, err := b.issue(pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		x509.ExtKeyUsageServerAuth, []string{node}, ips)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// KubeletServingCert is IssueKubeletServing for node, in the form
// kubelet.Config's ServingCert takes.
func (b *Bundle) KubeletServingCert(node string) func(ip net.IP) (tls.Certificate, error) {
	return func(ip net.IP) (tls.Certificate, error) { return b.IssueKubeletServing(node, ip) }
}

// ensureCA loads the bundle's CA from certName and keyName, or creates it
// under the common name cn when neither exists.
func (b *Bundle) ensureCA(certName, keyName, cn string) error {
	certPath, keyPath := b.Path(certName), b.Path(keyName)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	switch {
	case certErr == nil && keyErr == nil:
		cert, key, err := parsePair(certPEM, keyPEM)
		if err != nil {
			return fmt.Errorf("load %s: %w", certPath, err)
		}
		if !cert.IsCA {
			return fmt.Errorf("load %s: not a CA certificate", certPath)
		}
		b.caCert, b.caKey, b.CAPEM = cert, key, certPEM
		return nil
	case errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist):
	case certErr != nil && !errors.Is(certErr, os.ErrNotExist):
		return fmt.Errorf("read ca cert: %w", certErr)
	case keyErr != nil && !errors.Is(keyErr, os.ErrNotExist):
		return fmt.Errorf("read ca key: %w", keyErr)
	default:
		return fmt.Errorf("only one of %s and %s exists; remove it to create a new CA", certPath, keyPath)
	}

	now := b.now()
	cert, key, err := pkiutil.NewCertificateAuthority(&pkiutil.CertConfig{
		Config:   certutil.Config{CommonName: cn, NotBefore: now.Add(-time.Minute)},
		NotAfter: now.Add(caValidity), EncryptionAlgorithm: kubeadmapi.EncryptionAlgorithmECDSAP256})
	if err != nil {
		return fmt.Errorf("create ca: %w", err)
	}
	certPEM, keyPEM, err = encodePair(cert, key)
	if err != nil {
		return err
	}
	if err := writePair(certPath, certPEM, keyPath, keyPEM); err != nil {
		return err
	}
	b.caCert, b.caKey, b.CAPEM = cert, key, certPEM
	return nil
}

// ensureLeaf returns the pair stored under certName/keyName if it is signed by
// the current CA, not about to expire, carries every one of usages (and, for
// serving certificates, still covers every serving name); otherwise it
// issues and stores a new one.
func (b *Bundle) ensureLeaf(certName, keyName string, issue func() ([]byte, []byte, error), serving bool, usages ...x509.ExtKeyUsage) ([]byte, []byte, error) {
	certPath, keyPath := b.Path(certName), b.Path(keyName)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		if cert, _, err := parsePair(certPEM, keyPEM); err == nil && b.reusable(cert, serving) && hasUsages(cert, usages) {
			return certPEM, keyPEM, nil
		}
	}
	certPEM, keyPEM, err := issue()
	if err != nil {
		return nil, nil, err
	}
	if err := writePair(certPath, certPEM, keyPath, keyPEM); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// hasUsages reports whether cert carries every one of usages.
func hasUsages(cert *x509.Certificate, usages []x509.ExtKeyUsage) bool {
	for _, u := range usages {
		if !slices.Contains(cert.ExtKeyUsage, u) {
			return false
		}
	}
	return true
}

func (b *Bundle) reusable(cert *x509.Certificate, serving bool) bool {
	if cert.CheckSignatureFrom(b.caCert) != nil {
		return false
	}
	if b.now().Add(renewBefore).After(cert.NotAfter) {
		return false
	}
	if serving {
		for _, name := range ServingDNSNames {
			if cert.VerifyHostname(name) != nil {
				return false
			}
		}
		for _, ip := range b.servingIPs {
			if cert.VerifyHostname(ip.String()) != nil {
				return false
			}
		}
	}
	return true
}

func (b *Bundle) issue(subject pkix.Name, usage x509.ExtKeyUsage, dnsNames []string, ips []net.IP) ([]byte, []byte, error) {
	return b.issueFor(subject, []x509.ExtKeyUsage{usage}, dnsNames, ips)
}

// issueFor signs a new leaf for subject with the given extended key usages,
// as kubeadm signs its leaves (pkiutil.NewCertAndKey), for leafValidity or
// until the CA's end if that is sooner.
func (b *Bundle) issueFor(subject pkix.Name, usages []x509.ExtKeyUsage, dnsNames []string, ips []net.IP) ([]byte, []byte, error) {
	now := b.now()
	notAfter := now.Add(leafValidity)
	if notAfter.After(b.caCert.NotAfter) {
		notAfter = b.caCert.NotAfter
	}
	cert, key, err := pkiutil.NewCertAndKey(b.caCert, b.caKey, &pkiutil.CertConfig{
		Config: certutil.Config{CommonName: subject.CommonName, Organization: subject.Organization,
			AltNames: certutil.AltNames{DNSNames: dnsNames, IPs: ips}, Usages: usages, NotBefore: now.Add(-time.Minute)},
		NotAfter: notAfter, EncryptionAlgorithm: kubeadmapi.EncryptionAlgorithmECDSAP256})
	if err != nil {
		return nil, nil, fmt.Errorf("sign cert for %q: %w", subject.CommonName, err)
	}
	return encodePair(cert, key)
}

// encodePair is a certificate and its key in PEM form.
func encodePair(cert *x509.Certificate, key crypto.Signer) (certPEM, keyPEM []byte, err error) {
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal key: %w", err)
	}
	return pkiutil.EncodeCertPEM(cert), keyPEM, nil
}

// parsePair parses a certificate and its key and checks they belong together.
func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("parse key pair: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("parse certificate: %w", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("private key cannot sign")
	}
	return cert, signer, nil
}

// writePair writes the key (mode 0600) and then the certificate, each through
// a temporary file and a rename so a crash never leaves half a file
// (pkiutil's writers write in place).
func writePair(certPath string, certPEM []byte, keyPath string, keyPEM []byte) error {
	if err := writeAtomic(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return writeAtomic(certPath, certPEM, 0o644)
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// File names of the etcd pairs EnsureEtcd creates.
const (
	EtcdServerCertFile = "etcd-server.crt"
	EtcdServerKeyFile  = "etcd-server.key"
	EtcdClientCertFile = "apiserver-etcd-client.crt"
	EtcdClientKeyFile  = "apiserver-etcd-client.key"
	EtcdPeerCertFile   = "etcd-peer.crt"
	EtcdPeerKeyFile    = "etcd-peer.key"
)

// EtcdPeerUser is the common name of the embedded etcd's peer pair, the
// only name its peer port accepts from a client certificate.
const EtcdPeerUser = "etcd-peer"

// EnsureEtcd makes sure the embedded etcd's serving and peer pairs and the
// API server's etcd client pair exist, signed by the cluster CA (as
// kubeadm's etcd/server, etcd/peer and apiserver-etcd-client), so etcd's
// client and peer ports can both demand mutual TLS.
func (b *Bundle) EnsureEtcd() error {
	if _, _, err := b.ensureLeaf(EtcdPeerCertFile, EtcdPeerKeyFile, func() ([]byte, []byte, error) {
		// A peer is a server to its peers and a client of theirs.
		return b.issueFor(pkix.Name{CommonName: EtcdPeerUser}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			[]string{"localhost"}, ServingIPs)
	}, false); err != nil {
		return fmt.Errorf("ensure etcd peer cert: %w", err)
	}
	// As kubeadm's etcd/server, a client too: etcd's gRPC gateway dials
	// etcd's own port with it. A server-only pair from an older data dir
	// is issued again.
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if _, _, err := b.ensureLeaf(EtcdServerCertFile, EtcdServerKeyFile, func() ([]byte, []byte, error) {
		return b.issueFor(pkix.Name{CommonName: "etcd-server"}, both, []string{"localhost"}, ServingIPs)
	}, false, both...); err != nil {
		return fmt.Errorf("ensure etcd server cert: %w", err)
	}
	if _, _, err := b.ensureLeaf(EtcdClientCertFile, EtcdClientKeyFile, func() ([]byte, []byte, error) {
		return b.IssueClient("kube-apiserver-etcd-client", nil)
	}, false); err != nil {
		return fmt.Errorf("ensure etcd client cert: %w", err)
	}
	return nil
}

// File names of kube-apiserver's client pair for the kubelets' API.
const (
	KubeletClientCertFile = "apiserver-kubelet-client.crt"
	KubeletClientKeyFile  = "apiserver-kubelet-client.key"
)

// KubeletClientUser is the user kube-apiserver is to the kubelets (as
// kubeadm names it); it is bound to the system:kubelet-api-admin role.
const KubeletClientUser = "kube-apiserver-kubelet-client"

// EnsureKubeletClient makes sure kube-apiserver's client pair for the
// kubelets' API exists (kubeadm's apiserver-kubelet-client): the kubelets
// authenticate kube-apiserver by it when it proxies logs, exec, attach and
// port-forward.
func (b *Bundle) EnsureKubeletClient() error {
	if _, _, err := b.ensureLeaf(KubeletClientCertFile, KubeletClientKeyFile, func() ([]byte, []byte, error) {
		return b.IssueClient(KubeletClientUser, nil)
	}, false); err != nil {
		return fmt.Errorf("ensure kubelet client cert: %w", err)
	}
	return nil
}
