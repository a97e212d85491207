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

// TestCauseInTheRow: at 120×40, then resized to 80×24, each stuck pod's
// row says why in upstream's words within 10 s of the cluster being ready,
// no key pressed. (One cluster for both sizes: the terminal is resized as a
// user would drag its window.)
func TestCauseInTheRow(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	tmuxtest.Need(t)
	parallelCluster(t)
	manifest := filepath.Join(t.TempDir(), "stuck.yaml")
	if err := os.WriteFile(manifest, []byte(causeManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := startTerm(t, 120, 40, podtracebin.Path(t), "--data-dir", t.TempDir(), "-f", manifest)
	tm.WaitFor("3 Ready nodes", clusterStart, tmuxtest.Has("nodes 3/3"))
	before := "" // the huge row as drawn at the previous size
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		w, h := strconv.Itoa(size[0]), strconv.Itoa(size[1])
		tm.Tmux("resize-window", "-t", tm.Session, "-x", w, "-y", h)
		if got := strings.TrimSpace(tm.Tmux("display", "-p", "-t", tm.Session, "#{pane_width}x#{pane_height}")); got != w+"x"+h {
			t.Fatalf("the terminal is %s, not %sx%s", got, w, h)
		}
		// The frame drawn for this size, not the previous one cut by tmux.
		cut := strings.TrimSpace(string([]rune(before)[:min(len([]rune(before)), size[0])]))
		s := tm.WaitFor("both causes in their rows at "+w+"x"+h, 10*time.Second, func(s string) bool {
			huge := lineWith(s, " huge ")
			return strings.TrimSpace(huge) != cut && strings.Contains(huge, "Insufficient cpu") &&
				strings.Contains(lineWith(s, " nocm "), `configmap "cfg" not found`)
		})
		assertNoLogs(t, s)
		before = lineWith(s, " huge ")
		t.Logf("at %sx%s: %s", w, h, strings.TrimSpace(before))
	}
	tm.Keys("q")
	tm.WaitFor("podtrace to exit", 30*time.Second, tmuxtest.Has("podtrace exited 0"))
}
