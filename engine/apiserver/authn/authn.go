// Package authn answers the API server's first question about a request:
// who is asking. It follows kube-apiserver's request authenticators: x509
// client certificates (CN is the user, O the groups), static bearer tokens
// (the --token-auth-file CSV format), a union of both, the
// system:authenticated group for everyone who authenticated, and anonymous
// as the fallback for requests that carry no credentials at all. Presented
// but invalid credentials are an error, which the API server answers with
// 401 Unauthorized (see Unauthorized), never with anonymous access.
package authn

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Well-known user and group names, as in k8s.io/apiserver/pkg/authentication/user.
const (
	// Anonymous is the user name of unauthenticated requests.
	Anonymous = "system:anonymous"
	// AllAuthenticated is the group of every authenticated user.
	AllAuthenticated = "system:authenticated"
	// AllUnauthenticated is the group of the anonymous user.
	AllUnauthenticated = "system:unauthenticated"
	// SystemPrivilegedGroup is the group that may do anything.
	SystemPrivilegedGroup = "system:masters"
	// NodesGroup is the group of every kubelet.
	NodesGroup = "system:nodes"
	// KubeScheduler is the scheduler's user name.
	KubeScheduler = "system:kube-scheduler"
	// KubeControllerManager is the controller manager's own user name: its
	// shared informers watch with it, each controller writes as its own
	// service account.
	KubeControllerManager = "system:kube-controller-manager"
)

// Names of the methods that can authenticate a request (User.AuthenticatedBy).
const (
	MethodX509      = "x509"
	MethodToken     = "token"
	MethodAnonymous = "anonymous"
)

// User is an authenticated identity.
type User struct {
	// Name is the user name (for x509, the certificate's common name).
	Name string
	// UID identifies the user across renames; may be empty.
	UID string
	// Groups are the user's groups (for x509, the organizations).
	Groups []string
	// Extra holds additional authenticator-provided information.
	Extra map[string][]string
	// AuthenticatedBy names the method that produced this user
	// (MethodX509, MethodToken, MethodAnonymous), for the authn stage event.
	AuthenticatedBy string
}

// InGroup reports whether the user is a member of group.
func (u *User) InGroup(group string) bool { return slices.Contains(u.Groups, group) }

// Authenticator finds the user a request comes from. found is false, with a
// nil error, when the request carries no credentials this authenticator
// understands; a non-nil error means credentials were presented but are
// invalid.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (user *User, found bool, err error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*User, bool, error)

// AuthenticateRequest calls f.
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*User, bool, error) { return f(r) }

// Union tries each authenticator in order and returns the first user found.
// Errors are remembered and returned, joined, only when nobody found a user,
// so an invalid client certificate next to a valid token still authenticates.
type Union []Authenticator

// AuthenticateRequest implements Authenticator.
func (u Union) AuthenticateRequest(r *http.Request) (*User, bool, error) {
	var errs []error
	for _, a := range u {
		user, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return user, true, nil
		}
	}
	return nil, false, errors.Join(errs...)
}

// WithAuthenticatedGroup adds system:authenticated to every user a found,
// except the anonymous user and users already in system:authenticated or
// system:unauthenticated (kube-apiserver's AuthenticatedGroupAdder). The
// user is copied, never modified in place.
func WithAuthenticatedGroup(a Authenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*User, bool, error) {
		user, ok, err := a.AuthenticateRequest(r)
		if err != nil || !ok {
			return user, ok, err
		}
		if user.Name == Anonymous || user.InGroup(AllAuthenticated) || user.InGroup(AllUnauthenticated) {
			return user, true, nil
		}
		copied := *user
		copied.Groups = append(slices.Clone(user.Groups), AllAuthenticated)
		return &copied, true, nil
	})
}

// AnonymousUser returns the identity of a request without credentials.
func AnonymousUser() *User {
	return &User{Name: Anonymous, Groups: []string{AllUnauthenticated}, AuthenticatedBy: MethodAnonymous}
}

// WithAnonymous returns a's user when found, a's error when it fails (bad
// credentials are never anonymous), and the anonymous user otherwise.
func WithAnonymous(a Authenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*User, bool, error) {
		user, ok, err := a.AuthenticateRequest(r)
		if err != nil || ok {
			return user, ok, err
		}
		return AnonymousUser(), true, nil
	})
}

// Config selects the authenticators New chains together.
type Config struct {
	// ClientCAs verifies client certificates; nil disables x509.
	ClientCAs *x509.CertPool
	// Tokens authenticates bearer tokens; nil disables tokens.
	Tokens *Tokens
	// Anonymous lets requests without credentials through as system:anonymous.
	Anonymous bool
}

// New builds kube-apiserver's chain: x509, then bearer tokens, then the
// system:authenticated group, then (if enabled) anonymous.
func New(cfg Config) Authenticator {
	var union Union
	if cfg.ClientCAs != nil {
		union = append(union, NewX509(cfg.ClientCAs))
	}
	if cfg.Tokens != nil {
		union = append(union, cfg.Tokens)
	}
	a := WithAuthenticatedGroup(union)
	if cfg.Anonymous {
		a = WithAnonymous(a)
	}
	return a
}

// Unauthorized returns the error kube-apiserver answers a request that failed
// authentication with: 401, reason Unauthorized, message "Unauthorized".
// The cause is deliberately not shown to the client.
func Unauthorized() *apierrors.StatusError {
	return apierrors.NewUnauthorized("Unauthorized")
}

type userKey struct{}

// WithUser returns a copy of ctx carrying user.
func WithUser(ctx context.Context, user *User) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserFrom returns the user stored in ctx by WithUser.
func UserFrom(ctx context.Context) (*User, bool) {
	user, ok := ctx.Value(userKey{}).(*User)
	return user, ok && user != nil
}
