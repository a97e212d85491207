package proc

import (
	"path"

	"github.com/distribution/reference"
)

// ImageBase is the last element of image's repository path, by the docker
// reference grammar: "agnhost" for
// registry.k8s.io/e2e-test-images/agnhost:2.63.0@sha256:..., "busybox"
// for busybox. A name the grammar refuses (which the kubelet refuses
// before any CRI call) has none: "".
func ImageBase(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return ""
	}
	return path.Base(reference.Path(named))
}
