package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustEnsure(t *testing.T, dir string) *Bundle {
	t.Helper()
	b, err := Ensure(dir)
	if err != nil {
		t.Fatalf("Ensure(%s): %v", dir, err)
	}
	return b
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestEnsureCreatesFilesOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	first := mustEnsure(t, dir)
	for _, name := range []string{CACertFile, CAKeyFile, ServingCertFile, ServingKeyFile, AdminCertFile, AdminKeyFile, ViewerCertFile, ViewerKeyFile} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s missing: %v", name, err)
		}
		if strings.HasSuffix(name, ".key") && info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", name, info.Mode().Perm())
		}
	}
	second := mustEnsure(t, dir)
	if !bytes.Equal(first.CAPEM, second.CAPEM) {
		t.Error("second Ensure replaced the CA")
	}
	if !bytes.Equal(first.ServingCert().Certificate[0], second.ServingCert().Certificate[0]) {
		t.Error("second Ensure replaced a valid serving certificate")
	}
	if !bytes.Equal(first.AdminCertPEM, second.AdminCertPEM) || !bytes.Equal(first.ViewerKeyPEM, second.ViewerKeyPEM) {
		t.Error("second Ensure replaced valid client credentials")
	}
}

func TestEnsureRenewsLeafNearExpiry(t *testing.T) {
	dir := t.TempDir()
	first := mustEnsure(t, dir)
	later := func() time.Time { return time.Now().Add(leafValidity - renewBefore/2) }
	second, err := ensure(dir, later)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.CAPEM, second.CAPEM) {
		t.Error("CA replaced although it is still valid")
	}
	if bytes.Equal(first.AdminCertPEM, second.AdminCertPEM) {
		t.Error("admin certificate not renewed near its expiry")
	}
}

func TestEnsureRejectsHalfCA(t *testing.T) {
	dir := t.TempDir()
	mustEnsure(t, dir)
	if err := os.Remove(filepath.Join(dir, CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(dir); err == nil || !strings.Contains(err.Error(), "only one of") {
		t.Fatalf("Ensure with the CA key missing: err = %v, want an 'only one of' error", err)
	}
}

func TestClientCertificates(t *testing.T) {
	b := mustEnsure(t, t.TempDir())
	tests := []struct {
		name       string
		certPEM    []byte
		wantCN     string
		wantGroups []string
	}{
		{"admin", b.AdminCertPEM, "kubernetes-admin", []string{"system:masters"}},
		{"viewer", b.ViewerCertPEM, "viewer", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert := parseCert(t, tt.certPEM)
			if cert.Subject.CommonName != tt.wantCN || !slices.Equal(cert.Subject.Organization, tt.wantGroups) {
				t.Errorf("subject = %q %q, want %q %q", cert.Subject.CommonName, cert.Subject.Organization, tt.wantCN, tt.wantGroups)
			}
			_, err := cert.Verify(x509.VerifyOptions{Roots: b.ClientCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			if err != nil {
				t.Errorf("client cert does not verify against the CA: %v", err)
			}
		})
	}
	if _, _, err := b.IssueClient("", nil); err == nil {
		t.Error("IssueClient with an empty CN succeeded")
	}
}

// TestServingHandshake runs a real TLS server with the serving certificate
// and connects with the CA as the only root, under each serving name.
func TestServingHandshake(t *testing.T) {
	b := mustEnsure(t, t.TempDir())
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) > 0 {
			w.Write([]byte(r.TLS.PeerCertificates[0].Subject.CommonName))
		}
	}))
	srv.TLS = b.ServerTLSConfig()
	srv.StartTLS()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	_, port, _ := strings.Cut(addr, ":")

	adminPair, err := tls.X509KeyPair(b.AdminCertPEM, b.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// kubectl here, and in-cluster clients: the kubernetes Service's
	// ClusterIP and names, as on a kubeadm cluster.
	for _, serverName := range []string{"127.0.0.1", "localhost", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "10.96.0.1"} {
		t.Run(serverName, func(t *testing.T) {
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
				RootCAs:      b.ClientCertPool(),
				ServerName:   serverName,
				Certificates: []tls.Certificate{adminPair},
			}}}
			resp, err := client.Get("https://127.0.0.1:" + port + "/")
			if err != nil {
				t.Fatalf("handshake as %s: %v", serverName, err)
			}
			defer resp.Body.Close()
			buf := new(bytes.Buffer)
			buf.ReadFrom(resp.Body)
			if buf.String() != "kubernetes-admin" {
				t.Errorf("server saw client %q, want kubernetes-admin", buf.String())
			}
		})
	}
	if _, err := http.Get(srv.URL); err == nil {
		t.Error("a client without the CA trusted the server certificate")
	}
}

// etcd's gRPC gateway dials etcd's own port with the serving pair, so it
// must be a client certificate too; a server-only pair left by an older
// data dir is issued again, while a good one is kept.
func TestEtcdServerPairIsAClientToo(t *testing.T) {
	t.Parallel()
	b := mustEnsure(t, t.TempDir())
	usages := func() []x509.ExtKeyUsage {
		certPEM, err := os.ReadFile(b.Path(EtcdServerCertFile))
		if err != nil {
			t.Fatal(err)
		}
		return parseCert(t, certPEM).ExtKeyUsage
	}
	if err := b.EnsureEtcd(); err != nil {
		t.Fatal(err)
	}
	if u := usages(); !slices.Contains(u, x509.ExtKeyUsageClientAuth) || !slices.Contains(u, x509.ExtKeyUsageServerAuth) {
		t.Fatalf("etcd serving pair's usages = %v, want server and client auth", u)
	}
	good, _ := os.ReadFile(b.Path(EtcdServerCertFile))
	if err := b.EnsureEtcd(); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(b.Path(EtcdServerCertFile)); !bytes.Equal(good, again) {
		t.Error("EnsureEtcd replaced a good etcd serving pair")
	}
	certPEM, keyPEM, err := b.issue(pkix.Name{CommonName: "etcd-server"}, x509.ExtKeyUsageServerAuth, []string{"localhost"}, ServingIPs)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePair(b.Path(EtcdServerCertFile), certPEM, b.Path(EtcdServerKeyFile), keyPEM); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureEtcd(); err != nil {
		t.Fatal(err)
	}
	if u := usages(); !slices.Contains(u, x509.ExtKeyUsageClientAuth) {
		t.Errorf("a server-only etcd pair was kept: usages %v", u)
	}
}
