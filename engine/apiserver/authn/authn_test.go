package authn

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/pki"
)

// whoami is the answer of the test server: the authenticated user or the
// Status of a 401.
type whoami struct {
	User   *User
	Status *metav1.Status
}

// startServer runs a real loopback TLS server that authenticates every
// request with a and answers with the user (or the 401 Status) as JSON.
func startServer(t *testing.T, b *pki.Bundle, a Authenticator) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok, err := a.AuthenticateRequest(r)
		if err != nil || !ok {
			status := Unauthorized().ErrStatus
			w.WriteHeader(int(status.Code))
			json.NewEncoder(w).Encode(whoami{Status: &status})
			return
		}
		json.NewEncoder(w).Encode(whoami{User: user})
	}))
	srv.TLS = b.ServerTLSConfig()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func clientFor(t *testing.T, b *pki.Bundle, certPEM, keyPEM []byte) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: b.ClientCertPool()}
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}

func TestAuthenticateOverTLS(t *testing.T) {
	b, err := pki.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	foreignCert, foreignKey, err := other.IssueClient("mallory", []string{"system:masters"})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := GenerateTokens(User{Name: "system:kube-scheduler"}, ServiceAccountUser("kube-system", "replicaset-controller"))
	if err != nil {
		t.Fatal(err)
	}
	schedulerToken, _ := tokens.TokenFor("system:kube-scheduler")
	rsToken, _ := tokens.TokenFor("system:serviceaccount:kube-system:replicaset-controller")
	srv := startServer(t, b, New(Config{ClientCAs: b.ClientCertPool(), Tokens: tokens, Anonymous: true}))

	tests := []struct {
		name          string
		certPEM       []byte
		keyPEM        []byte
		authorization string
		wantUser      string
		wantGroups    []string
		wantBy        string
		want401       bool
	}{
		{name: "admin client cert", certPEM: b.AdminCertPEM, keyPEM: b.AdminKeyPEM,
			wantUser: "kubernetes-admin", wantGroups: []string{"system:masters", "system:authenticated"}, wantBy: MethodX509},
		{name: "viewer client cert", certPEM: b.ViewerCertPEM, keyPEM: b.ViewerKeyPEM,
			wantUser: "viewer", wantGroups: []string{"system:authenticated"}, wantBy: MethodX509},
		{name: "cert from another CA", certPEM: foreignCert, keyPEM: foreignKey, want401: true},
		{name: "cert from another CA with a valid token", certPEM: foreignCert, keyPEM: foreignKey, authorization: "Bearer " + schedulerToken,
			wantUser: "system:kube-scheduler", wantGroups: []string{"system:authenticated"}, wantBy: MethodToken},
		{name: "scheduler token", authorization: "Bearer " + schedulerToken,
			wantUser: "system:kube-scheduler", wantGroups: []string{"system:authenticated"}, wantBy: MethodToken},
		{name: "service account token", authorization: "bearer " + rsToken,
			wantUser:   "system:serviceaccount:kube-system:replicaset-controller",
			wantGroups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}, wantBy: MethodToken},
		{name: "unknown token", authorization: "Bearer not-a-token", want401: true},
		{name: "no credentials", wantUser: "system:anonymous", wantGroups: []string{"system:unauthenticated"}, wantBy: MethodAnonymous},
		{name: "basic auth is not understood", authorization: "Basic dXNlcjpwdw==",
			wantUser: "system:anonymous", wantGroups: []string{"system:unauthenticated"}, wantBy: MethodAnonymous},
		{name: "empty bearer", authorization: "Bearer ",
			wantUser: "system:anonymous", wantGroups: []string{"system:unauthenticated"}, wantBy: MethodAnonymous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/api", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.authorization != "" {
				req.Header.Set("Authorization", tt.authorization)
			}
			resp, err := clientFor(t, b, tt.certPEM, tt.keyPEM).Do(req)
			if err != nil {
				t.Fatalf("request failed (the TLS handshake must accept any client cert): %v", err)
			}
			defer resp.Body.Close()
			var got whoami
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if tt.want401 {
				if resp.StatusCode != http.StatusUnauthorized || got.Status == nil || got.Status.Message != "Unauthorized" || got.Status.Reason != metav1.StatusReasonUnauthorized {
					t.Fatalf("got %d %+v, want 401 Unauthorized", resp.StatusCode, got)
				}
				return
			}
			if resp.StatusCode != http.StatusOK || got.User == nil {
				t.Fatalf("got %d %+v, want user %q", resp.StatusCode, got.Status, tt.wantUser)
			}
			if got.User.Name != tt.wantUser || !slices.Equal(got.User.Groups, tt.wantGroups) || got.User.AuthenticatedBy != tt.wantBy {
				t.Errorf("user = %q %q by %q, want %q %q by %q", got.User.Name, got.User.Groups, got.User.AuthenticatedBy, tt.wantUser, tt.wantGroups, tt.wantBy)
			}
		})
	}
}

func TestAnonymousDisabled(t *testing.T) {
	a := New(Config{Tokens: NewTokens()})
	req := httptest.NewRequest(http.MethodGet, "/api", nil)
	if user, ok, err := a.AuthenticateRequest(req); ok || err != nil {
		t.Errorf("no credentials without anonymous = %v %v %v, want not found", user, ok, err)
	}
}

func TestInvalidCertErrorNamesCertificate(t *testing.T) {
	b, err := pki.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/api", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{other.ServingCert().Leaf}}
	_, ok, err := NewX509(b.ClientCertPool()).AuthenticateRequest(req)
	if ok || err == nil || !strings.HasPrefix(err.Error(), "verifying certificate SN=") {
		t.Errorf("foreign cert: ok=%v err=%v, want a 'verifying certificate SN=...' error", ok, err)
	}
}

func TestUnauthorizedStatus(t *testing.T) {
	s := Unauthorized().ErrStatus
	if s.Code != 401 || s.Reason != metav1.StatusReasonUnauthorized || s.Message != "Unauthorized" || s.Status != metav1.StatusFailure {
		t.Errorf("Unauthorized() = %+v", s)
	}
}

func TestUnionJoinsErrorsOnlyWhenNobodyFound(t *testing.T) {
	fail := AuthenticatorFunc(func(*http.Request) (*User, bool, error) { return nil, false, errors.New("bad cert") })
	none := AuthenticatorFunc(func(*http.Request) (*User, bool, error) { return nil, false, nil })
	bob := AuthenticatorFunc(func(*http.Request) (*User, bool, error) { return &User{Name: "bob"}, true, nil })
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	if u, ok, err := (Union{fail, bob}).AuthenticateRequest(req); !ok || err != nil || u.Name != "bob" {
		t.Errorf("fail,bob = %v %v %v, want bob", u, ok, err)
	}
	if _, ok, err := (Union{fail, none}).AuthenticateRequest(req); ok || err == nil || err.Error() != "bad cert" {
		t.Errorf("fail,none = %v %v, want the error", ok, err)
	}
	if _, ok, err := (Union{none}).AuthenticateRequest(req); ok || err != nil {
		t.Errorf("none = %v %v, want not found without error", ok, err)
	}
}

func TestX509CredentialID(t *testing.T) {
	b, err := pki.Ensure(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(b.AdminCertPEM, b.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/api", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{pair.Leaf}}
	u, ok, err := NewX509(b.ClientCertPool()).AuthenticateRequest(req)
	if !ok || err != nil {
		t.Fatalf("admin cert: %v %v", ok, err)
	}
	ids := u.Extra[CredentialIDKey]
	if len(ids) != 1 || !strings.HasPrefix(ids[0], "X509SHA256=") || len(ids[0]) != len("X509SHA256=")+64 {
		t.Errorf("credential id = %q, want X509SHA256=<64 hex digits>", ids)
	}
}
