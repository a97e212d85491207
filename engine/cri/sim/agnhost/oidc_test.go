package agnhost

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "gopkg.in/go-jose/go-jose.v2"
	"gopkg.in/go-jose/go-jose.v2/jwt"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// fakeIssuer is the API server's OIDC discovery on loopback: the
// discovery document and the JWKS of key, served only to requests that
// carry the bearer token want.
func fakeIssuer(t *testing.T, key *rsa.PrivateKey, want string) *httptest.Server {
	t.Helper()
	var issuer string
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": issuer, "jwks_uri": issuer + "/openid/v1/jwks",
			"response_types_supported": []string{"id_token"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/openid/v1/jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+want {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes that distrust it
	srv.StartTLS()
	t.Cleanup(srv.Close)
	issuer = srv.URL
	return srv
}

// signToken is a service account token of issuer for audience, signed by key.
func signToken(t *testing.T, key *rsa.PrivateKey, issuer, audience string) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	raw, err := jwt.Signed(signer).Claims(oidcClaims{
		Claims: jwt.Claims{Issuer: issuer, Subject: "system:serviceaccount:ns:default", Audience: jwt.Audience{audience},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(10 * time.Minute))},
		Kubernetes: oidcKubeClaims{Namespace: "ns", ServiceAccount: oidcKubeName{Name: "default", UID: "u1"}},
	}).CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func newKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// TestServiceAccountIssuerDiscovery runs agnhost
// test-service-account-issuer-discovery as the conformance spec does,
// against a fake issuer reached through the pod's dial.
func TestServiceAccountIssuerDiscovery(t *testing.T) {
	key, otherKey := newKey(t), newKey(t)
	const saToken = "sa-bearer-token"
	srv := fakeIssuer(t, key, saToken)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	// The pod reaches the issuer, and nothing else.
	toIssuer := dialOnly(func(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error) {
		if addr == srv.Listener.Addr().String() {
			return (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, addr)
		}
		return nil, refused(network)
	})

	for _, tc := range []struct {
		name     string
		token    string
		ca       []byte
		wantCode int
		want     []string
	}{
		{"valid", signToken(t, key, srv.URL, "oidc-discovery-test"), ca, 0,
			[]string{"OK: Got token", "validating with in-cluster discovery", "OK: got issuer " + srv.URL,
				"OK: Constructed OIDC provider for issuer " + srv.URL, "OK: Validated signature on JWT", "OK: Got valid claims from token!"}},
		{"another key", signToken(t, otherKey, srv.URL, "oidc-discovery-test"), ca, 1,
			[]string{"failed to validate with in-cluster discovery: failed to verify signature", "falling back to validating with external discovery"}},
		{"another audience", signToken(t, key, srv.URL, "someone-else"), ca, 1,
			[]string{"failed to validate with in-cluster discovery: oidc: expected audience \"oidc-discovery-test\""}},
		{"cluster CA missing", signToken(t, key, srv.URL, "oidc-discovery-test"), nil, 1,
			[]string{"failed to validate with in-cluster discovery: ", "certificate signed by unknown authority"}},
		{"not a JWT", "garbage", ca, 1, []string{"OK: Got token", "compact JWS format must have three parts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sa, tokens := t.TempDir(), t.TempDir()
			files := map[string][]byte{filepath.Join(sa, "token"): []byte(saToken), filepath.Join(tokens, "sa-token"): []byte(tc.token)}
			if tc.ca != nil {
				files[filepath.Join(sa, "ca.crt")] = tc.ca
			}
			for name, b := range files {
				if err := os.WriteFile(name, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			fsys := proc.NewFS([]proc.Mount{{ContainerPath: "/var/run/secrets/kubernetes.io/serviceaccount", HostPath: sa, ReadOnly: true},
				{ContainerPath: "/var/run/secrets/tokens", HostPath: tokens, ReadOnly: true}}, false).WithImage(agnhostImage)
			var stderr strings.Builder
			code, err := proc.Run(t.Context(), proc.Process{Programs: Programs(), Argv: []string{"/agnhost", "test-service-account-issuer-discovery",
				"--token-path", "/var/run/secrets/tokens/sa-token", "--audience", "oidc-discovery-test", "--v=4"},
				Env: []string{"KUBERNETES_SERVICE_HOST=" + host, "KUBERNETES_SERVICE_PORT=" + port}, FS: fsys,
				Stderr: &stderr, Image: agnhostImage, Net: toIssuer})
			if err != nil || code != tc.wantCode {
				t.Fatalf("exit %d, %v; want %d\n%s", code, err, tc.wantCode, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// TestServiceAccountIssuerDiscoveryTokenPath reads --token-path as
// upstream's os.ReadFile does: a relative path against the working
// directory, an error naming the path as given.
func TestServiceAccountIssuerDiscoveryTokenPath(t *testing.T) {
	tokens := t.TempDir()
	if err := os.WriteFile(filepath.Join(tokens, "sa-token"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	fsys := proc.NewFS([]proc.Mount{{ContainerPath: "/var/run/secrets/tokens", HostPath: tokens, ReadOnly: true}}, false).WithImage(agnhostImage)
	nowhere := dialOnly(func(_ context.Context, network, _ string, _ time.Duration) (net.Conn, error) {
		return nil, refused(network)
	})
	for _, tc := range []struct {
		dir, tokenPath, want string
	}{
		{"/var/run/secrets/tokens", "sa-token", "OK: Got token"},
		{"/var/run/secrets", "tokens/sa-token", "OK: Got token"},
		{"/etc", "../var/run/secrets/tokens/sa-token", "OK: Got token"},
		{"/etc", "/var/run/secrets/tokens/sa-token", "OK: Got token"},
		{"/", "sa-token", "open sa-token: no such file or directory"},
		{"/var/run/secrets/tokens", "missing", "open missing: no such file or directory"},
	} {
		var stderr strings.Builder
		code, err := proc.Run(t.Context(), proc.Process{Programs: Programs(), Argv: []string{"/agnhost", "test-service-account-issuer-discovery",
			"--token-path", tc.tokenPath}, Dir: tc.dir, FS: fsys, Stderr: &stderr, Image: agnhostImage, Net: nowhere})
		if err != nil || code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("--token-path %s in %s: exit %d (%v), log:\n%s\nwant exit 1, a log with %q", tc.tokenPath, tc.dir, code, err, stderr.String(), tc.want)
		}
	}
}
