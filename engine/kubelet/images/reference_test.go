package images

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		in, want, familiar, err string
	}{
		{in: "nginx", want: "docker.io/library/nginx:latest", familiar: "nginx:latest"},
		{in: "nginx:1.27", want: "docker.io/library/nginx:1.27", familiar: "nginx:1.27"},
		{in: "bitnami/redis:7", want: "docker.io/bitnami/redis:7", familiar: "bitnami/redis:7"},
		{in: "registry.k8s.io/pause:3.10", want: "registry.k8s.io/pause:3.10", familiar: "registry.k8s.io/pause:3.10"},
		{in: "localhost:5000/app", want: "localhost:5000/app:latest"},
		{in: "localhost/app:v1", want: "localhost/app:v1"},
		{in: "index.docker.io/library/busybox", want: "docker.io/library/busybox:latest"},
		{in: "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", want: "docker.io/library/busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{in: "nginx:", err: "invalid reference format"},
		{in: "Nginx", err: "invalid reference format: repository name (Nginx) must be lowercase"},
		{in: "ngin x", err: "invalid reference format"},
		{in: "nginx::1", err: "invalid reference format"},
		{in: "", err: "invalid reference format"},
		{in: "-nginx", err: "invalid reference format"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Parse(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got.String() != tt.want {
			t.Errorf("Parse(%q) = %s, want %s", tt.in, got, tt.want)
		}
		if tt.familiar != "" && got.Familiar() != tt.familiar {
			t.Errorf("Parse(%q).Familiar() = %s, want %s", tt.in, got.Familiar(), tt.familiar)
		}
	}
}

func TestApplyDefaultTagMessage(t *testing.T) {
	_, err := ApplyDefaultTag("nginx:")
	want := `Failed to apply default image tag "nginx:": couldn't parse image name "nginx:": invalid reference format`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
