package model

import (
	"strings"
	"testing"
)

func TestParseProgram(t *testing.T) {
	tests := []struct {
		name      string
		image     string
		cmd, args []string
		ann       map[string]string
		want      string // rendered steps, or the command
		term      bool   // ignores SIGTERM
	}{
		{name: "server runs forever", image: "docker.io/library/nginx:1.27", want: "forever"},
		{name: "busybox default sh exits", image: "docker.io/library/busybox:latest", want: "exit0", term: true},
		{name: "annotation", image: "nginx", ann: map[string]string{AnnotationExitAfter: "5s", AnnotationExitCode: "1"}, want: "sleep5s exit1"},
		{name: "a shell script", cmd: []string{"/bin/sh", "-c"}, args: []string{"sleep 10; exit 2"}, want: "/bin/sh -c sleep 10; exit 2", term: true},
		{name: "sleep", cmd: []string{"sleep", "3600"}, want: "sleep 3600", term: true},
		{name: "a server", cmd: []string{"nginx", "-g", "daemon off;"}, want: "nginx -g daemon off;"},
		// agnhost's entrypoint, with its default command pause.
		{name: "agnhost's arguments", image: "registry.k8s.io/e2e-test-images/agnhost:2.63.0", args: []string{"netexec", "--http-port=80"},
			want: "/agnhost netexec --http-port=80"},
		{name: "agnhost's defaults", image: "registry.k8s.io/e2e-test-images/agnhost:2.63.0", want: "/agnhost pause"},
		{name: "agnhost's command", image: "registry.k8s.io/e2e-test-images/agnhost:2.63.0", cmd: []string{"/agnhost-2"},
			args: []string{"entrypoint-tester"}, want: "/agnhost-2 entrypoint-tester"},
		{name: "nonewprivs' command", image: "registry.k8s.io/e2e-test-images/nonewprivs:1.4", want: "nnp"},
		// kitten and nautilus: agnhost's entrypoint, their command test-webserver.
		{name: "kitten's defaults", image: "registry.k8s.io/e2e-test-images/kitten:1.8", want: "/agnhost test-webserver"},
		{name: "nautilus's defaults", image: "registry.k8s.io/e2e-test-images/nautilus:1.8", want: "/agnhost test-webserver"},
	}
	for _, tt := range tests {
		p, err := ParseProgram(tt.image, tt.cmd, tt.args, tt.ann)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		parts := p.Argv
		for _, s := range p.steps {
			switch s.op {
			case "sleep":
				parts = append(parts, "sleep"+s.d.String())
			case "exit":
				parts = append(parts, s.op+string(rune('0'+s.code)))
			default:
				parts = append(parts, s.op)
			}
		}
		if got := strings.Join(parts, " "); got != tt.want || p.IgnoresTerm != tt.term {
			t.Errorf("%s: %q (ignores SIGTERM: %t), want %q (%t)", tt.name, got, p.IgnoresTerm, tt.want, tt.term)
		}
	}
}
