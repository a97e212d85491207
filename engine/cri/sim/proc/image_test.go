package proc

import "testing"

func TestImageBase(t *testing.T) {
	for image, want := range map[string]string{
		"busybox":                          "busybox",
		"docker.io/library/busybox:latest": "busybox",
		"registry.k8s.io/e2e-test-images/agnhost:2.63.0": "agnhost",
		"localhost:5000/tools/curl":                      "curl",
		"127.0.0.1:5000/dig@sha256:" + sha:               "dig",
		"registry.k8s.io/agnhost:2.55@sha256:" + sha:     "agnhost",
		"":                 "",
		"Not/A/Valid:Name": "",
	} {
		if got := ImageBase(image); got != want {
			t.Errorf("ImageBase(%q) = %q, want %q", image, got, want)
		}
	}
}

// sha is a digest's hex.
const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
