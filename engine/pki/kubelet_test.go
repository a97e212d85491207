package pki

import (
	"crypto/x509"
	"net"
	"testing"
)

func TestKubeletServingCert(t *testing.T) {
	b, err := Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := b.KubeletServingCert("node-1")(net.ParseIP("127.3.4.5"))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: b.ClientCertPool(), DNSName: "127.3.4.5",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatal(err)
	}
	if cert.VerifyHostname("node-1") != nil || cert.Subject.CommonName != "system:node:node-1" ||
		len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
		t.Fatalf("subject %v, names %v %v", cert.Subject, cert.DNSNames, cert.IPAddresses)
	}
	if _, err := b.IssueKubeletServing(""); err == nil {
		t.Fatal("no node name accepted")
	}
}
