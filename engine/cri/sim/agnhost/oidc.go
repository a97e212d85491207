package agnhost

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/coreos/go-oidc"
	"github.com/spf13/pflag"
	"golang.org/x/oauth2"
	"gopkg.in/go-jose/go-jose.v2/jwt"
	"k8s.io/client-go/rest"
)

// The service account's files in a container, as rest.InClusterConfig
// reads them.
const (
	inClusterTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	inClusterCAFile    = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)

// errOIDCFatal ends oidcDiscovery as upstream's log.Fatal ends agnhost:
// the line is already logged, the exit status is 1.
var errOIDCFatal = errors.New("fatal")

// oidcDiscovery is agnhost test-service-account-issuer-discovery
// (test/images/agnhost/openidmetadata): it reads the token at
// --token-path and validates it with go-oidc against its issuer's OIDC
// discovery, first in-cluster (trusting only the cluster's CA, sending
// the service account's bearer token), then as an external issuer. It
// logs as upstream does and exits 0 when the token is valid for
// --audience, 1 otherwise. Its connections go through the container's
// resolver and the pod's network (resolve, dial). fs is agnhost's flag
// set for it.
func (c *cmd) oidcDiscovery(ctx context.Context, fs *pflag.FlagSet, args []string) (int, error) {
	tokenPath := fs.String("token-path", "", "Path to read service account token from.")
	audience := fs.String("audience", "", "Audience to check on received token.")
	if err := fs.Parse(args); err != nil {
		return 1, nil
	}
	l := log.New(c.p.Stderr, "", log.LstdFlags)
	if err := c.discover(ctx, l, *tokenPath, *audience); err != nil {
		if !errors.Is(err, errOIDCFatal) {
			l.Print(err) // log.Fatal(err)
		}
		return 1, nil
	}
	return 0, nil
}

// discover is upstream's main: nil when the token validates.
func (c *cmd) discover(ctx context.Context, l *log.Logger, tokenPath, audience string) error {
	b, err := c.readFile(tokenPath)
	if err != nil {
		return err
	}
	raw := string(b)
	l.Print("OK: Got token")

	l.Print("validating with in-cluster discovery")
	inCluster, closeIdle, err := c.inClusterClient()
	if err != nil {
		return err
	}
	defer closeIdle()
	err = validateToken(oidcContext(ctx, inCluster), l, raw, audience)
	if err == nil {
		return nil
	}
	if errors.Is(err, errOIDCFatal) {
		return err
	}
	l.Print("failed to validate with in-cluster discovery: ", err)

	l.Print("falling back to validating with external discovery")
	// The system's roots, as http.DefaultTransport trusts, no token.
	external := &http.Transport{DialContext: c.podDial, TLSHandshakeTimeout: 10 * time.Second}
	defer external.CloseIdleConnections()
	return validateToken(oidcContext(ctx, external), l, raw, audience)
}

// readFile is os.ReadFile in the container: a relative name is the
// working directory's, and an error names the file as given.
func (c *cmd) readFile(name string) ([]byte, error) {
	b, err := c.p.FS.ReadFile(c.p.Abs(name))
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Path = name
	}
	return b, err
}

// oidcContext has go-oidc use rt (it reads oauth2.HTTPClient).
func oidcContext(ctx context.Context, rt http.RoundTripper) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: rt})
}

// inClusterClient is rest.TransportFor(rest.InClusterConfig()) for the
// container: the API server at KUBERNETES_SERVICE_HOST and _PORT of its
// environment, the CA and bearer token of its service account's files,
// its connections dialed in the pod's network. closeIdle ends them.
func (c *cmd) inClusterClient() (rt http.RoundTripper, closeIdle func(), err error) {
	host, port := c.p.Getenv("KUBERNETES_SERVICE_HOST"), c.p.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, nil, rest.ErrNotInCluster
	}
	token, err := c.p.FS.ReadFile(inClusterTokenFile)
	if err != nil {
		return nil, nil, err
	}
	cfg := &rest.Config{Host: "https://" + net.JoinHostPort(host, port), BearerToken: string(token)}
	if ca, err := c.p.FS.ReadFile(inClusterCAFile); err == nil { // InClusterConfig goes on without one
		cfg.TLSClientConfig.CAData = ca
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	base := &http.Transport{TLSClientConfig: tlsConfig, DialContext: c.podDial, TLSHandshakeTimeout: 10 * time.Second}
	rt, err = rest.HTTPWrappersForConfig(cfg, base)
	if err != nil {
		return nil, nil, fmt.Errorf("could not get roundtripper: %v", err)
	}
	return rt, base.CloseIdleConnections, nil
}

// podDial connects to addr (host:port) as the container would: host
// through its resolver, the connection in the pod's network.
func (c *cmd) podDial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip := c.p.Resolve(ctx, host)
	if ip == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return c.p.Dial(ctx, network, net.JoinHostPort(ip.String(), port), 30*time.Second)
}

// validateToken is upstream's validate: the token's signature and claims
// checked against its issuer's discovery, with go-oidc. Errors that
// upstream ends on at once are logged and returned as errOIDCFatal.
func validateToken(ctx context.Context, l *log.Logger, raw, audience string) error {
	tok, err := jwt.ParseSigned(raw)
	if err != nil {
		l.Print(err)
		return errOIDCFatal
	}
	var unsafeClaims oidcClaims
	if err := tok.UnsafeClaimsWithoutVerification(&unsafeClaims); err != nil {
		l.Print(err)
		return errOIDCFatal
	}
	l.Printf("OK: got issuer %s", unsafeClaims.Issuer)
	l.Printf("Full, not-validated claims: \n%#v", unsafeClaims)

	iss, err := oidc.NewProvider(ctx, unsafeClaims.Issuer)
	if err != nil {
		return err
	}
	l.Printf("OK: Constructed OIDC provider for issuer %v", unsafeClaims.Issuer)

	validTok, err := iss.Verifier(&oidc.Config{
		ClientID:             audience,
		SupportedSigningAlgs: []string{oidc.RS256, oidc.ES256},
	}).Verify(ctx, raw)
	if err != nil {
		return err
	}
	l.Print("OK: Validated signature on JWT")

	var safeClaims oidcClaims
	if err := validTok.Claims(&safeClaims); err != nil {
		return err
	}
	l.Print("OK: Got valid claims from token!")
	l.Printf("Full, validated claims: \n%#v", &safeClaims)
	return nil
}

// oidcKubeName, oidcKubeClaims and oidcClaims are upstream's claims of a
// service account token.
type oidcKubeName struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

type oidcKubeClaims struct {
	Namespace      string       `json:"namespace"`
	ServiceAccount oidcKubeName `json:"serviceaccount"`
}

type oidcClaims struct {
	jwt.Claims

	Kubernetes oidcKubeClaims `json:"kubernetes.io"`
}

// String is upstream's: namespace/name for audience.
func (k *oidcClaims) String() string {
	return fmt.Sprintf("%s/%s for %s", k.Kubernetes.Namespace, k.Kubernetes.ServiceAccount.Name, k.Audience)
}
