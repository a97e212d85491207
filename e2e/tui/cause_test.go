package tuie2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/tmuxtest"
)

// causeManifest holds a pod that asks for more cpu than any node has and a
// pod whose configMap volume does not exist.
const causeManifest = `apiVersion: v1
kind: Pod
metadata:
  name: huge
spec:
  containers:
  - name: app
    image: nginx:1.27
    resources:
      requests:
        cpu: "500"
---
apiVersion: v1
kind: Pod
metadata:
  name: nocm
spec:
  containers:
  - name: app
    image: nginx:1.27
    volumeMounts:
    - {name: settings, mountPath: /etc/app}
  volumes:
  - name: settings
    configMap:
      name: cfg
`

// TestCauseInTheRow: at 120×40 and 80×24, each stuck pod's row says why in
// upstream's words within 10 s of the cluster being ready, no key pressed.
func TestCauseInTheRow(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	tmuxtest.Need(t)
	manifest := filepath.Join(t.TempDir(), "stuck.yaml")
	if err := os.WriteFile(manifest, []byte(causeManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(strconv.Itoa(size[0])+"x"+strconv.Itoa(size[1]), func(t *testing.T) {
			tm := startTerm(t, size[0], size[1], podtracebin.Path(t), "--data-dir", t.TempDir(), "-f", manifest)
			tm.WaitFor("3 Ready nodes", time.Minute, tmuxtest.Has("nodes 3/3"))
			s := tm.WaitFor("both causes in their rows", 10*time.Second, func(s string) bool {
				return strings.Contains(lineWith(s, " huge "), "Insufficient cpu") &&
					strings.Contains(lineWith(s, " nocm "), `configmap "cfg" not found`)
			})
			assertNoLogs(t, s)
			tm.Keys("q")
			tm.WaitFor("podtrace to exit", 30*time.Second, tmuxtest.Has("podtrace exited 0"))
		})
	}
}
