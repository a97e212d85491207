// Package images parses image references the way the docker reference
// grammar does, and pulls images for the kubelet with the upstream
// imagePullPolicy rules, per-node cache checks, events and back-off.
package images

import (
	"fmt"
	"regexp"
	"strings"
)

// DefaultDomain is the registry of references without one.
const DefaultDomain = "docker.io"

// Reference is a parsed, normalized image reference.
type Reference struct {
	Domain string // registry host[:port], "docker.io" when omitted
	Path   string // repository path, "library/nginx" for "nginx"
	Tag    string // "latest" when neither tag nor digest is given
	Digest string // "sha256:..." when given
}

// String returns the normalized form, e.g. "docker.io/library/nginx:1.27".
func (r Reference) String() string {
	s := r.Domain + "/" + r.Path
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Name returns domain/path without tag or digest.
func (r Reference) Name() string { return r.Domain + "/" + r.Path }

// Familiar returns the short form people write: "nginx:1.27" for docker.io/library/nginx:1.27.
func (r Reference) Familiar() string {
	s := r.Domain + "/" + r.Path
	if r.Domain == DefaultDomain {
		s = strings.TrimPrefix(r.Path, "library/")
	}
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// The docker reference grammar (github.com/distribution/reference).
const (
	alnum      = `[a-z0-9]+`
	separator  = `(?:[._]|__|[-]+)`
	component  = alnum + `(?:` + separator + alnum + `)*`
	domainComp = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	domain     = domainComp + `(?:\.` + domainComp + `)*(?::[0-9]+)?`
	tag        = `[\w][\w.-]{0,127}`
	digest     = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
)

var referenceRE = regexp.MustCompile(`^((?:` + domain + `/)?` + component + `(?:/` + component + `)*)(?::(` + tag + `))?(?:@(` + digest + `))?$`)
var anyCaseRE = regexp.MustCompile(`^((?:` + domain + `/)?[a-zA-Z0-9._-]+(?:/[a-zA-Z0-9._-]+)*)(?::(` + tag + `))?(?:@(` + digest + `))?$`)

// ErrInvalidReference is the text of the parser's error, as docker's.
const ErrInvalidReference = "invalid reference format"

// Parse normalizes ref like docker's ParseNormalizedNamed followed by the
// kubelet's default-tag rule: no domain means docker.io, a single path
// component gets "library/", and no tag or digest means ":latest".
func Parse(ref string) (Reference, error) {
	m := referenceRE.FindStringSubmatch(ref)
	if m == nil {
		if am := anyCaseRE.FindStringSubmatch(ref); am != nil && am[1] != strings.ToLower(am[1]) {
			return Reference{}, fmt.Errorf("%s: repository name (%s) must be lowercase", ErrInvalidReference, am[1])
		}
		return Reference{}, fmt.Errorf("%s", ErrInvalidReference)
	}
	if len(m[1]) > 255 {
		return Reference{}, fmt.Errorf("repository name must not be more than 255 characters")
	}
	r := Reference{Domain: DefaultDomain, Path: m[1], Tag: m[2], Digest: m[3]}
	if i := strings.IndexByte(m[1], '/'); i >= 0 {
		first := m[1][:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" || first != strings.ToLower(first) {
			r.Domain, r.Path = first, m[1][i+1:]
		}
	}
	if r.Domain == "index.docker.io" {
		r.Domain = DefaultDomain
	}
	if r.Domain == DefaultDomain && !strings.Contains(r.Path, "/") {
		r.Path = "library/" + r.Path
	}
	if r.Tag == "" && r.Digest == "" {
		r.Tag = "latest"
	}
	return r, nil
}

// ApplyDefaultTag is the kubelet's check before a pull; its error reads as
// upstream's: `Failed to apply default image tag "x": couldn't parse image
// name "x": invalid reference format`.
func ApplyDefaultTag(image string) (Reference, error) {
	r, err := Parse(image)
	if err != nil {
		return Reference{}, fmt.Errorf("Failed to apply default image tag %q: couldn't parse image name %q: %v", image, image, err) //nolint:staticcheck // upstream wording
	}
	return r, nil
}
