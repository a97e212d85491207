package model

import "github.com/distribution/reference"

// defaultDomain is the registry of image names that give none.
const defaultDomain = "docker.io"

// imageRef is an image name normalized as the kubelet and containerd
// normalize it (docker.io/library/nginx:1.27), split into the parts the
// simulated registries look at.
type imageRef struct {
	Domain string // registry host[:port]
	Path   string // repository path, "library/nginx" for "nginx"
	Tag    string // "latest" when neither tag nor digest is given
	Digest string // "sha256:..." when given
}

// parseReference parses s with the docker reference grammar
// (reference.ParseNormalizedNamed) and gives a name with neither tag nor
// digest the tag "latest", as the kubelet does before a pull.
func parseReference(s string) (imageRef, error) {
	named, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return imageRef{}, err
	}
	named = reference.TagNameOnly(named)
	r := imageRef{Domain: reference.Domain(named), Path: reference.Path(named)}
	if t, ok := named.(reference.Tagged); ok {
		r.Tag = t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		r.Digest = d.Digest().String()
	}
	return r, nil
}

// Name is the repository: "docker.io/library/nginx".
func (r imageRef) Name() string { return r.Domain + "/" + r.Path }

// String is the normalized reference: "docker.io/library/nginx:1.27".
func (r imageRef) String() string {
	s := r.Name()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Normalize names an image as the simulated runtime keys it
// (docker.io/library/nginx:1.27); an unparsable name is kept as it is.
func Normalize(image string) string {
	r, err := parseReference(image)
	if err != nil {
		return image
	}
	return r.String()
}
