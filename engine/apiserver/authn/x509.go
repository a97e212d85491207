package authn

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// CredentialIDKey is the Extra key naming the credential a user presented,
// as kube-apiserver sets it for client certificates.
const CredentialIDKey = "authentication.kubernetes.io/credential-id"

// X509 authenticates requests by their TLS client certificate, verified
// against Roots for client authentication. The user is the certificate's
// common name and the groups are its organizations, as in kube-apiserver.
type X509 struct {
	// Roots are the CAs allowed to sign client certificates.
	Roots *x509.CertPool
	// Now returns the time certificates are checked at; nil means time.Now.
	Now func() time.Time

	// verified remembers certificates whose chain verified, by fingerprint,
	// so a client's every request costs a hash rather than an ECDSA check.
	verified sync.Map // [32]byte → time.Time (verified until)
}

// reverifyAfter bounds how long a verified chain is trusted without a new check.
const reverifyAfter = time.Minute

// NewX509 returns an x509 authenticator trusting roots.
func NewX509(roots *x509.CertPool) *X509 { return &X509{Roots: roots} }

// AuthenticateRequest implements Authenticator. A request without a client
// certificate is not found; a certificate that does not verify is an error.
func (a *X509) AuthenticateRequest(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	fingerprint := sha256.Sum256(leaf.Raw)
	if until, ok := a.verified.Load(fingerprint); ok && now.Before(until.(time.Time)) && now.Before(leaf.NotAfter) &&
		len(r.TLS.PeerCertificates) == 1 {
		return x509User(leaf, fingerprint)
	}
	opts := x509.VerifyOptions{
		Roots:         a.Roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if a.Now != nil {
		opts.CurrentTime = a.Now()
	}
	for _, intermediate := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(intermediate)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verifying certificate %s failed: %w", certificateIdentifier(leaf), err)
	}
	if len(r.TLS.PeerCertificates) == 1 {
		a.verified.Store(fingerprint, now.Add(reverifyAfter))
	}
	return x509User(leaf, fingerprint)
}

func x509User(leaf *x509.Certificate, fingerprint [32]byte) (*User, bool, error) {
	if leaf.Subject.CommonName == "" {
		return nil, false, nil
	}
	return &User{
		Name:            leaf.Subject.CommonName,
		Groups:          slices.Clone(leaf.Subject.Organization),
		Extra:           map[string][]string{CredentialIDKey: {"X509SHA256=" + hex.EncodeToString(fingerprint[:])}},
		AuthenticatedBy: MethodX509,
	}, true, nil
}

// certificateIdentifier names a certificate in error messages the way
// kube-apiserver's x509 authenticator does (serial and key identifiers).
func certificateIdentifier(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%d, SKID=%s, AKID=%s", c.SerialNumber, hexColons(c.SubjectKeyId), hexColons(c.AuthorityKeyId))
}

func hexColons(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	const digits = "0123456789ABCDEF"
	out := make([]byte, 0, len(b)*3-1)
	for i, v := range b {
		if i > 0 {
			out = append(out, ':')
		}
		out = append(out, digits[v>>4], digits[v&0xf])
	}
	return string(out)
}
