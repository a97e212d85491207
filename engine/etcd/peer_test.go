package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine/pki"
)

// The embedded member's peer port speaks only mutual TLS and accepts only
// the peer certificate: a plain HTTP request, a TLS client without a
// certificate and one with another certificate of the same CA (the admin's)
// get nothing from it, as on a kubeadm cluster; the peer pair is served.
func TestPeerPortDemandsThePeerCertificate(t *testing.T) {
	dir := t.TempDir()
	b, err := pki.Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureEtcd(); err != nil {
		t.Fatal(err)
	}
	ca := b.Path(pki.CACertFile)
	s, err := Start(context.Background(), Config{DataDir: t.TempDir(),
		ServerTLS:      TLSFiles{CAFile: ca, CertFile: b.Path(pki.EtcdServerCertFile), KeyFile: b.Path(pki.EtcdServerKeyFile)},
		ClientTLS:      TLSFiles{CAFile: ca, CertFile: b.Path(pki.EtcdClientCertFile), KeyFile: b.Path(pki.EtcdClientKeyFile)},
		PeerTLS:        TLSFiles{CAFile: ca, CertFile: b.Path(pki.EtcdPeerCertFile), KeyFile: b.Path(pki.EtcdPeerKeyFile)},
		PeerCommonName: pki.EtcdPeerUser})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	peer := s.embedded.Peers[0].Addr().String()
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(caPEM)
	get := func(scheme string, certs []tls.Certificate) (int, error) {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
		resp, err := c.Get(scheme + "://" + peer + "/members")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	pair := func(cert, key string) []tls.Certificate {
		p, err := tls.LoadX509KeyPair(b.Path(cert), b.Path(key))
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{p}
	}
	if code, err := get("http", nil); err == nil && code == http.StatusOK {
		t.Error("plain HTTP to the peer port got 200")
	}
	if code, err := get("https", nil); err == nil {
		t.Errorf("TLS without a client certificate got %d from the peer port", code)
	}
	if code, err := get("https", pair(pki.AdminCertFile, pki.AdminKeyFile)); err == nil {
		t.Errorf("the admin's certificate got %d from the peer port", code)
	}
	if code, err := get("https", pair(pki.EtcdPeerCertFile, pki.EtcdPeerKeyFile)); err != nil || code != http.StatusOK {
		t.Errorf("the peer certificate got %d, %v from the peer port; want 200", code, err)
	}
}

// A data directory written by a member whose peer port was plain HTTP (an
// older podtrace) starts with the peer port on TLS and keeps its data.
func TestPlainPeerDataStartsWithPeerTLS(t *testing.T) {
	ctx := context.Background()
	dir, pkiDir := t.TempDir(), t.TempDir()
	s, err := Start(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.Put(ctx, "/registry/test/a", "1"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	b, err := pki.Ensure(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureEtcd(); err != nil {
		t.Fatal(err)
	}
	s, err = Start(ctx, Config{DataDir: dir, PeerCommonName: pki.EtcdPeerUser,
		PeerTLS: TLSFiles{CAFile: b.Path(pki.CACertFile), CertFile: b.Path(pki.EtcdPeerCertFile), KeyFile: b.Path(pki.EtcdPeerKeyFile)}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := s.Client.Get(ctx, "/registry/test/a")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "1" {
		t.Fatalf("after the switch to peer TLS: %v %v", resp, err)
	}
}
