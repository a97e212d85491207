package proc

import (
	"net/http"
	"testing"
	"time"
)

// curl as the Services specs run it from an exec pod (session affinity,
// NodePorts): the body alone on stdout, silent failures with curl's codes.
func TestCurl(t *testing.T) {
	clusterDNS(t)
	webService(t, 2*time.Second, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" && r.URL.Path != "/hostname" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("web-1")) //nolint:errcheck
	})
	for _, tc := range []struct {
		argv   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"curl", "-q", "-s", "--connect-timeout", "2", "--max-time", "60", "http://10.96.12.34:80/"}, 0, "web-1", ""},
		{[]string{"curl", "-q", "-s", "--connect-timeout", "2", "http://web:80/"}, 0, "web-1", ""},
		{[]string{"curl", "-g", "-q", "-s", "10.96.12.34/hostname"}, 0, "web-1", ""},
		// HostPort's check from a host-network pod.
		{[]string{"curl", "-g", "--connect-timeout", "5", "--interface", "172.18.0.2", "http://10.96.12.34:80/hostname"}, 0, "web-1", ""},
		{[]string{"sh", "-c", "curl -q -s --connect-timeout 2 http://10.96.0.99:80/; test \"$?\" -ne \"0\""}, 0, "", ""},
		{[]string{"curl", "-s", "--connect-timeout", "2", "http://10.96.0.99/"}, 7, "", ""},
		{[]string{"curl", "-s", "--connect-timeout", "2", "http://10.96.0.98/"}, 28, "", ""},
		{[]string{"curl", "-sS", "http://nothere/"}, 6, "", "curl: (6) Could not resolve host: nothere\n"},
		{[]string{"curl", "-s", "http://10.96.12.34/missing"}, 0, "404 page not found\n", ""},
		{[]string{"curl", "-sf", "http://10.96.12.34/missing"}, 22, "", ""},
		{[]string{"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://10.96.12.34/"}, 0, "200", ""},
		{[]string{"curl", "-Z", "http://10.96.12.34/"}, 2, "",
			"curl: option -Z: is unknown\ncurl: try 'curl --help' or 'curl --manual' for more information\n"},
	} {
		code, stdout, stderr := runIn(t, agnhostImage, "10.96.0.10", tc.argv...)
		if code != tc.code || stdout != tc.stdout || stderr != tc.stderr {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q", tc.argv, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}
