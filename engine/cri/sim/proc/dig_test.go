package proc

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// agnhostImage is an image with dig and curl (agnhost's).
const agnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.55"

// runIn runs argv under exec in a pod of namespace default whose image is
// image, its nameserver nameserver.
func runIn(t *testing.T, image, nameserver string, argv ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errw bytes.Buffer
	code, err := Run(context.Background(), Process{Argv: argv, FS: pod(t, nameserver), Stdout: &out, Stderr: &errw, Exec: true, Image: image})
	if err != nil {
		t.Fatalf("%q: %v", argv, err)
	}
	return code, out.String(), errw.String()
}

// dig as the DNS specs' prober scripts run it: each test -n's its
// output, so an answer must print and a missing name print nothing.
func TestDig(t *testing.T) {
	clusterDNS(t)
	a := "web.default.svc.cluster.local.\t5\tIN\tA\t10.96.12.34\n"
	for _, tc := range []struct {
		nameserver string
		argv       []string
		code       int
		stdout     string
	}{
		{"10.96.0.10", []string{"dig", "+notcp", "+noall", "+answer", "+search", "web", "A"}, 0, a},
		{"10.96.0.10", []string{"dig", "+tcp", "+noall", "+answer", "+search", "web.default", "A"}, 0, a},
		{"10.96.0.10", []string{"dig", "+notcp", "+noall", "+answer", "+search", "web.default.svc.cluster.local", "A"}, 0, a},
		{"10.96.0.10", []string{"dig", "+tcp", "+noall", "+answer", "+search", "34.12.96.10.in-addr.arpa.", "PTR"}, 0,
			"34.12.96.10.in-addr.arpa.\t5\tIN\tPTR\tweb.default.svc.cluster.local.\n"},
		{"10.96.0.10", []string{"dig", "+notcp", "+noall", "+answer", "+search", "_http._tcp.web.default.svc.cluster.local", "SRV"}, 0,
			"_http._tcp.web.default.svc.cluster.local.\t5\tIN\tSRV\t0 100 80 web.default.svc.cluster.local.\n"},
		{"10.96.0.10", []string{"dig", "+short", "-x", "10.96.12.34"}, 0, "web.default.svc.cluster.local.\n"},
		{"10.96.0.10", []string{"dig", "+short", "+search", "web"}, 0, "10.96.12.34\n"},
		// Without +search, dig asks the name as it is; nothing there prints nothing.
		{"10.96.0.10", []string{"dig", "+short", "web"}, 0, ""},
		{"10.96.0.10", []string{"dig", "+notcp", "+noall", "+answer", "+search", "nothere", "A"}, 0, ""},
		{"10.0.0.99", []string{"dig", "+noall", "+answer", "web"}, 9, ";; connection timed out; no servers could be reached\n"},
	} {
		code, stdout, stderr := runIn(t, agnhostImage, tc.nameserver, tc.argv...)
		if code != tc.code || stdout != tc.stdout {
			t.Errorf("%q: exit %d, stdout:\n%s\nstderr: %s\nwant exit %d, stdout:\n%s", tc.argv, code, stdout, stderr, tc.code, tc.stdout)
		}
	}
	// Without options, the whole reply.
	if _, out, _ := runIn(t, agnhostImage, "10.96.0.10", "dig", "web.default.svc.cluster.local"); !strings.Contains(out, ";; ANSWER SECTION:\n"+a) ||
		!strings.Contains(out, "status: NOERROR") {
		t.Errorf("dig web.default.svc.cluster.local printed:\n%s", out)
	}
	// busybox has no dig: the command is an unknown one, which prints nothing.
	if _, out, _ := runIn(t, "docker.io/library/busybox:1.36", "10.96.0.10", "dig", "+short", "+search", "web"); out != "" {
		t.Errorf("dig in busybox printed %q", out)
	}
}
