package model

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// KnownRegistries are the registry hosts a simulated pull can reach. Any other
// host fails as an unresolvable name does.
var KnownRegistries = map[string]bool{
	"docker.io": true, "registry.k8s.io": true, "ghcr.io": true, "quay.io": true,
	"gcr.io": true, "mcr.microsoft.com": true, "public.ecr.aws": true,
	"localhost:5000": true, "registry.local:5000": true,
}

// catalogue holds familiar images and their unpacked sizes in bytes. The
// key is the normalized name without tag.
var catalogue = map[string]int64{
	"docker.io/library/nginx":                 72_955_450,
	"docker.io/library/busybox":               4_269_608,
	"docker.io/library/alpine":                7_800_000,
	"docker.io/library/redis":                 117_000_000,
	"docker.io/library/postgres":              438_000_000,
	"docker.io/library/mysql":                 602_000_000,
	"docker.io/library/httpd":                 148_000_000,
	"docker.io/library/python":                1_020_000_000,
	"docker.io/library/node":                  1_100_000_000,
	"docker.io/library/golang":                820_000_000,
	"docker.io/library/ubuntu":                78_000_000,
	"docker.io/library/debian":                117_000_000,
	"docker.io/library/memcached":             84_000_000,
	"docker.io/library/rabbitmq":              240_000_000,
	"docker.io/library/traefik":               180_000_000,
	"docker.io/library/mongo":                 750_000_000,
	"docker.io/library/registry":              25_000_000,
	"registry.k8s.io/pause":                   320_368,
	"registry.k8s.io/echoserver":              46_000_000,
	"registry.k8s.io/e2e-test-images/agnhost": 54_000_000,
	"registry.k8s.io/coredns/coredns":         18_000_000,
	"registry.k8s.io/kube-proxy":              30_000_000,
	"ghcr.io/stefanprodan/podinfo":            29_000_000,
	"quay.io/prometheus/prometheus":           100_000_000,
	"quay.io/prometheus/node-exporter":        11_000_000,
	"gcr.io/google-samples/hello-app":         10_500_000,
}

// versionTag is what a published tag of a catalogue image looks like:
// "latest", "stable", "alpine", or a version such as 1.27, 1.27.3-alpine, v2.
var versionTag = regexp.MustCompile(`^(latest|stable|mainline|alpine|slim|bookworm|jammy|noble|v?[0-9]+(\.[0-9]+)*([-_.][a-z0-9.]+)*)$`)

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
//   - catalogue images have every tag that looks like a published tag
//     (versionTag), other tags are not found;
//   - any other well-formed repository on a known registry exists, with a size
//     derived from a hash of its name;
//   - a repository whose path contains "private" needs pull credentials.
func resolve(ref imageRef) resolution {
	if !KnownRegistries[ref.Domain] {
		return resolution{unreachable: true}
	}
	name := ref.Name()
	if size, ok := catalogue[name]; ok {
		if ref.Digest == "" && !versionTag.MatchString(ref.Tag) {
			return resolution{notFound: true}
		}
		return resolution{size: size}
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
