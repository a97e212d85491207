package model

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// KnownRegistries are the registry hosts a simulated pull can reach. Any other
// host fails as an unresolvable name does.
var KnownRegistries = map[string]bool{
	"docker.io": true, "registry.k8s.io": true, "ghcr.io": true, "quay.io": true,
	"gcr.io": true, "mcr.microsoft.com": true, "public.ecr.aws": true,
	"localhost:5000": true, "registry.local:5000": true,
}

// resolution is the outcome of looking an image up in the simulated registries.
type resolution struct {
	size        int64
	private     bool // needs credentials
	notFound    bool // the tag does not exist
	noRepo      bool // the repository does not exist
	unreachable bool // the host does not resolve
}

// resolve applies the documented rules:
//   - the registry host must be one of KnownRegistries, else the name does not resolve;
//   - docker.io official images (library/...) exist only if they are in the catalogue;
//   - catalogue images (catalogue.txt) have their published tags, and a
//     pull by digest; any other tag is not found;
//   - any other well-formed repository on a known registry exists, with a size
//     derived from a hash of its name;
//   - a repository whose path contains "private" needs pull credentials.
func resolve(ref imageRef) resolution {
	if !KnownRegistries[ref.Domain] {
		return resolution{unreachable: true}
	}
	name := ref.Name()
	if img, ok := catalogue()[name]; ok {
		if ref.Digest == "" && !img.tags[ref.Tag] {
			return resolution{notFound: true}
		}
		return resolution{size: img.size}
	}
	if ref.Domain == defaultDomain && strings.HasPrefix(ref.Path, "library/") {
		return resolution{noRepo: true}
	}
	return resolution{size: hashSize(name), private: strings.Contains(ref.Path, "private")}
}

// hashSize gives an unknown image a stable size between 5 MB and 300 MB.
func hashSize(name string) int64 {
	h := sha256.Sum256([]byte(name))
	v := int64(h[0])<<16 | int64(h[1])<<8 | int64(h[2])
	return 5_000_000 + v%295_000_000
}

// digestOf returns a stable "sha256:..." for s.
func digestOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// pullError renders a failed resolution as containerd reports it.
func pullError(ref imageRef, r resolution) error {
	full := ref.String()
	prefix := fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q", full, full)
	switch {
	case r.unreachable:
		host := strings.Split(ref.Domain, ":")[0]
		return fmt.Errorf("rpc error: code = Unknown desc = %s: failed to do request: Head %q: dial tcp: lookup %s: no such host",
			prefix, manifestURL(ref), host)
	case r.noRepo:
		return fmt.Errorf("rpc error: code = Unknown desc = %s: pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed", prefix)
	case r.notFound:
		return fmt.Errorf("rpc error: code = NotFound desc = %s: %s: not found", prefix, full)
	case r.private:
		return fmt.Errorf("rpc error: code = Unknown desc = %s: pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials", prefix)
	}
	return nil
}

func manifestURL(ref imageRef) string {
	ver := ref.Tag
	if ref.Digest != "" {
		ver = ref.Digest
	}
	host := ref.Domain
	if host == defaultDomain {
		host = "registry-1.docker.io"
	}
	return fmt.Sprintf("https://%s/v2/%s/manifests/%s", host, ref.Path, ver)
}
