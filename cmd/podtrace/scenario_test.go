package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/internal/podtracebin"
)

// TestScenarioCommand runs `podtrace scenario` as a user would; each run
// is a process of its own, so they go in parallel.
func TestScenarioCommand(t *testing.T) {
	t.Parallel()
	bin := podtracebin.Path(t)
	dir := t.TempDir()
	write := func(t *testing.T, name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const mine = `title: My own
story: A pod with a typo.
nodes: 1
manifests: |
  apiVersion: apps/v1
  kind: Deployment
  metadata: {name: typo}
  spec:
    selector: {matchLabels: {app: typo}}
    template:
      metadata: {labels: {app: typo}}
      spec: {containers: [{name: app, image: "ngnix:1.27"}]}
goal:
  deployment: typo
expect:
  - waiting: ImagePullBackOff
    message: MESSAGE
hints: [read the event]
fix:
  apply: |
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: typo}
    spec:
      selector: {matchLabels: {app: typo}}
      template:
        metadata: {labels: {app: typo}}
        spec: {containers: [{name: app, image: "nginx:1.27"}]}
`

	t.Run("list", func(t *testing.T) {
		t.Parallel()
		out, errOut, code := run(t, bin, "scenario", "list")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 14 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(out, "rbac-forbidden") {
			t.Fatalf("list:\n%s", out)
		}
	})
	t.Run("check passes", func(t *testing.T) {
		t.Parallel()
		out, errOut, code := run(t, bin, "scenario", "missing-configmap", "--headless", "--check")
		if code != 0 || !strings.Contains(out, "scenario missing-configmap behaves as documented") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if !strings.Contains(errOut, `configmap "frontend-settings" not found`) {
			t.Fatalf("the log does not show what was seen:\n%s", errOut)
		}
	})
	t.Run("check fails when the documented message never shows", func(t *testing.T) {
		t.Parallel()
		file := write(t, "mine.yaml", strings.Replace(mine, "MESSAGE", "no such message", 1))
		_, errOut, code := run(t, bin, "scenario", file, "--headless", "--check", "--timeout", "3s")
		if code != 2 || !strings.Contains(errOut, `not seen within 3s: container waiting ImagePullBackOff "no such message"`) {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	t.Run("a user's file is checked too", func(t *testing.T) {
		t.Parallel()
		file := write(t, "ok.yaml", strings.Replace(mine, "MESSAGE", `'Back-off pulling image "ngnix:1.27"'`, 1))
		out, errOut, code := run(t, bin, "scenario", file, "--headless", "--check", "--timeout", "2m")
		if code != 0 || !strings.Contains(out, "scenario ok behaves as documented") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("malformed file names line and field", func(t *testing.T) {
		t.Parallel()
		file := write(t, "bad.yaml", strings.Replace(mine, "  deployment: typo", "  deployment: typo\n  pod: web", 1))
		_, errOut, code := run(t, bin, "scenario", file, "--headless", "--check")
		if code != 1 || !strings.Contains(errOut, "bad.yaml:14: field goal: name exactly one of deployment and pod") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	t.Run("graded hints and the explanation", func(t *testing.T) {
		t.Parallel()
		out, _, code := run(t, bin, "scenario", "hint", "image-typo", "2")
		if code != 0 || !strings.HasPrefix(out, "Hint 1 of 3: ") || !strings.Contains(out, "\nHint 2 of 3: ") || strings.Contains(out, "Hint 3") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		out, _, code = run(t, bin, "scenario", "explain", "image-typo")
		if code != 0 || !strings.Contains(out, "Fix: correct the image to nginx:1.27") || !strings.Contains(out, "image: nginx:1.27") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("unknown name", func(t *testing.T) {
		t.Parallel()
		_, errOut, code := run(t, bin, "scenario", "nope")
		if code != 1 || !strings.Contains(errOut, `no scenario "nope" (built in: cni-out-of-ips,`) {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
}
