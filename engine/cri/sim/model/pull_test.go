package model

import (
	"context"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func TestPullErrors(t *testing.T) {
	m := Timing{Clock: testingclock.NewFakeClock(time.Now())}
	ctx := context.Background()
	tests := []struct {
		image, want string
		auth        *runtimeapi.AuthConfig
	}{
		{image: "nginx:1.27"},
		{image: "ghcr.io/acme/shop:v3"},
		{image: "nginx:no_such", want: `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:no_such": failed to resolve reference "docker.io/library/nginx:no_such": docker.io/library/nginx:no_such: not found`},
		// A version nginx never published (the README's failed-pull example).
		{image: "nginx:1.277", want: `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.277": failed to resolve reference "docker.io/library/nginx:1.277": docker.io/library/nginx:1.277: not found`},
		{image: "busybox"},
		{image: "nginx:1.277@sha256:" + strings.Repeat("ab", 32)},
		{image: "registry.k8s.io/pause:3.10.2"},
		{image: "registry.k8s.io/pause:3.11.7", want: "registry.k8s.io/pause:3.11.7: not found"},
		{image: "nginxx", want: "pull access denied, repository does not exist or may require authorization"},
		{image: "registry.example.com/app:1", want: `failed to do request: Head "https://registry.example.com/v2/app/manifests/1": dial tcp: lookup registry.example.com: no such host`},
		{image: "quay.io/acme/private-api:1", want: "no basic auth credentials"},
		{image: "quay.io/acme/private-api:1", auth: &runtimeapi.AuthConfig{Username: "u", Password: "p"}},
	}
	for _, tt := range tests {
		img, err := m.Pull(ctx, "n1", tt.image, tt.auth)
		if tt.want == "" {
			if err != nil || img.GetSize() == 0 || !strings.HasPrefix(img.GetId(), "sha256:") {
				t.Errorf("pull %s: %+v %v", tt.image, img, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("pull %s: got %v, want %q", tt.image, err, tt.want)
		}
	}
}
