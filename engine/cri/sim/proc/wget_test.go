package proc

import (
	"fmt"
	"io"
	"net/http"
	"testing"
)

func TestWget(t *testing.T) {
	clusterDNS(t)
	webService(t, 0, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/write" { // what a POST sent
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s %s\n", r.Method, r.Header.Get("Content-Type"), b)
			return
		}
		if r.URL.Path != "/" || r.UserAgent() != "Wget" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("hello from web\n")) //nolint:errcheck
	})
	for _, tc := range []struct {
		argv   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"wget", "-qO-", "http://web.default.svc.cluster.local"}, 0, "hello from web\n", ""},
		// The search domains find a short name; -O - apart says the same.
		{[]string{"wget", "-q", "-O", "-", "http://web/"}, 0, "hello from web\n", ""},
		{[]string{"wget", "-O-", "10.96.12.34"}, 0, "hello from web\n",
			"Connecting to 10.96.12.34 (10.96.12.34:80)\nwriting to stdout\nwritten to stdout\n"},
		{[]string{"sh", "-c", "cd /tmp && wget http://web && cat /tmp/index.html"}, 0, "hello from web\n",
			"Connecting to web (10.96.12.34:80)\nsaving to 'index.html'\n'index.html' saved\n"},
		{[]string{"wget", "--spider", "http://web"}, 0, "", "Connecting to web (10.96.12.34:80)\nremote file exists\n"},
		{[]string{"wget", "-qO-", "http://web/missing"}, 1, "", "wget: server returned error: HTTP/1.1 404 Not Found\n"},
		{[]string{"wget", "-qO-", "http://10.96.0.99"}, 1, "", "wget: can't connect to remote host (10.96.0.99): Connection refused\n"},
		{[]string{"wget", "-qO-", "http://nothere"}, 1, "", "wget: bad address 'nothere'\n"},
		{[]string{"wget", "-qO-", "https://web"}, 1, "", "wget: not an http or ftp url: https://web\n"},
		// The PreStop spec's hook posts JSON with --post-data.
		{[]string{"wget", "-O-", `--post-data={"Source": "prestop"}`, "http://10.96.12.34/write"}, 0,
			"POST application/x-www-form-urlencoded {\"Source\": \"prestop\"}\n",
			"Connecting to 10.96.12.34 (10.96.12.34:80)\nwriting to stdout\nwritten to stdout\n"},
		{[]string{"sh", "-c", "echo -n a=1 > /tmp/form && wget -qO- --header 'Content-Type: text/plain' --post-file /tmp/form http://web/write"}, 0,
			"POST text/plain a=1\n", ""},
		{[]string{"wget", "-qO-", "--post-file", "/nothere", "http://web/write"}, 1, "", "wget: can't open '/nothere': No such file or directory\n"},
		{[]string{"wget"}, 1, "", wgetUsage},
		{[]string{"wget", "-T", "x", "http://web"}, 1, "", wgetUsage},
	} {
		code, stdout, stderr := run(t, pod(t, "10.96.0.10"), true, tc.argv...)
		if code != tc.code || stdout != tc.stdout || stderr != tc.stderr {
			t.Errorf("%q: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout:\n%s\nstderr:\n%s",
				tc.argv, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}
