package agnhost

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

func TestLogsGenerator(t *testing.T) {
	line := regexp.MustCompile(`^I\d{4} \d\d:\d\d:\d\d\.\d{6}       1 logs_generator\.go:76\] (\d+) (GET|POST|PUT) /api/v1/namespaces/(kube-system|default|ns)/pods/[a-z0-9]{3,4} ([2-5]\d\d)$`)
	for _, tc := range []struct {
		args   []string
		code   int
		lines  int
		slept  time.Duration
		stderr string // a fatal's message, after klog's header
	}{
		{[]string{"--log-lines-total", "100", "--run-duration", "20s"}, 0, 100, 20 * time.Second, ""},
		{[]string{"-t", "4", "-d", "1s"}, 0, 4, time.Second, ""},
		{[]string{"--alsologtostderr", "-v=4", "-t", "2", "-d", "1s"}, 0, 2, time.Second, ""}, // klog's flags
		{[]string{"--run-duration", "1s"}, 255, 0, 0, "logs_generator.go:64] Invalid total number of lines: 0\n"},
		{[]string{"-t", "3"}, 255, 0, 0, "logs_generator.go:68] Invalid duration: 0s\n"},
	} {
		var stdout, stderr bytes.Buffer
		var slept time.Duration
		code, err := proc.Run(context.Background(), proc.Process{Programs: Programs(), Argv: append([]string{"/agnhost", "logs-generator"}, tc.args...), FS: proc.NewFS(nil, false),
			Stdout: &stdout, Stderr: &stderr, Image: agnhostImage,
			Sleep: func(_ context.Context, d time.Duration) error { slept += d; return nil }})
		if err != nil || code != tc.code || slept != tc.slept || stdout.Len() != 0 {
			t.Errorf("%q: exit %d (%v) after %v, stdout %q; want exit %d after %v", tc.args, code, err, slept, stdout.String(), tc.code, tc.slept)
		}
		if tc.stderr != "" {
			if !strings.HasPrefix(stderr.String(), "F") || !strings.HasSuffix(stderr.String(), tc.stderr) {
				t.Errorf("%q: stderr %q, want klog's fatal %q", tc.args, stderr.String(), tc.stderr)
			}
			continue
		}
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if len(lines) != tc.lines {
			t.Fatalf("%q: %d lines, want %d:\n%s", tc.args, len(lines), tc.lines, stderr.String())
		}
		for i, l := range lines {
			if m := line.FindStringSubmatch(l); m == nil || m[1] != strconv.Itoa(i) {
				t.Errorf("%q: line %d is %q, want agnhost's line %d", tc.args, i, l, i)
			}
		}
	}
}
