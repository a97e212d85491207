package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
)

// An extension API server trusts kube-apiserver's proxy pair by the
// front-proxy CA alone, and the cluster CA does not vouch for it.
func TestFrontProxy(t *testing.T) {
	b, err := Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureFrontProxy(); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(b.Path(FrontProxyClientCertFile), b.Path(FrontProxyClientKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != FrontProxyClientUser {
		t.Errorf("common name %q, want %q", cert.Subject.CommonName, FrontProxyClientUser)
	}
	caPEM, err := os.ReadFile(b.Path(FrontProxyCACertFile))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: usage}); err != nil {
		t.Errorf("the front-proxy CA does not verify the proxy pair: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: b.ClientCertPool(), KeyUsages: usage}); err == nil {
		t.Error("the cluster CA verifies the proxy pair")
	}
	// Kept across restarts.
	before := cert.SerialNumber
	if err := b.EnsureFrontProxy(); err != nil {
		t.Fatal(err)
	}
	again, _ := tls.LoadX509KeyPair(b.Path(FrontProxyClientCertFile), b.Path(FrontProxyClientKeyFile))
	if c, _ := x509.ParseCertificate(again.Certificate[0]); c.SerialNumber.Cmp(before) != 0 {
		t.Error("the proxy pair was reissued")
	}
}

// The serving certificate names the advertised address, which the
// API server's OpenID discovery document gives as its keys' host; a data
// dir whose certificate lacks it gets a new one.
func TestServingCertNamesAdvertisedAddress(t *testing.T) {
	dir := t.TempDir()
	if _, err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP("10.244.1.1")
	b, err := Ensure(dir, ip)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(b.ServingCert().Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.VerifyHostname(ip.String()); err != nil {
		t.Error(err)
	}
}
