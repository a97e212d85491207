package version

import (
	"strings"
	"testing"
)

func TestKubernetesMajorMinor(t *testing.T) {
	major, minor := KubernetesMajorMinor()
	if major == "" || minor == "" || !strings.HasPrefix(Kubernetes, "v"+major+"."+minor+".") {
		t.Fatalf("KubernetesMajorMinor() = %q, %q for %s", major, minor, Kubernetes)
	}
}
