package tuie2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/tmuxtest"
)

// TestEndToEnd starts the real podtrace binary (embedded etcd, API server,
// controllers, scheduler, 3 kubelets) in tmux at 120×40, launches the
// built-in 3-replica workload with a, waits until the lanes show the pods
// Running, moves the selection, opens the detail and the help, and quits
// with q, checking the screen at each step and that no library log line
// ever reaches it.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	tmuxtest.Need(t)
	parallelCluster(t)
	bin := podtracebin.Path(t)
	data := t.TempDir()
	tm := startTerm(t, 120, 40, bin, "--data-dir", data)

	s := tm.WaitFor("the first frame with 3 Ready nodes", clusterStart,
		tmuxtest.Has("podtrace", "embedded", "nodes 3/3 Ready", "etcd healthy", "simulated", "speed 1×", "No pods yet"))
	assertNoLogs(t, s)

	tm.Keys("a")
	s = tm.WaitFor("the workload picker", 10*time.Second, tmuxtest.Has("Pick a workload", "3-replica web Deployment"))
	tm.Keys("Escape")
	tm.WaitFor("the picker closed", 5*time.Second, func(s string) bool { return !strings.Contains(s, "Pick a workload") })
	applyWorkload(t, tm, "web")

	// The real kubelet reports a pod Running before its Ready condition, and
	// the Deployment counts it ready after that: wait for all of it.
	s = tm.WaitFor("three pods Running and the Deployment 3/3 ready", 90*time.Second, func(s string) bool {
		return strings.Count(s, " Running ") >= 3 && strings.Contains(s, "pods 3 Running") &&
			strings.Contains(lineWith(s, "deploy/web"), "3/3")
	})
	assertNoLogs(t, s)
	// Lanes are grouped: the Deployment, its ReplicaSet, then the pods, each
	// pod lane created through the API (authn…persist) and run to ready.
	dep, rs := lineWith(s, "deploy/web"), lineWith(s, "rs/web-")
	if dep == "" || rs == "" {
		t.Fatalf("pods are not grouped under deploy/web and its ReplicaSet:\n%s", s)
	}
	if strings.Index(s, dep) > strings.Index(s, rs) {
		t.Fatalf("the ReplicaSet is drawn above its Deployment:\n%s", s)
	}
	if !strings.Contains(dep, "3/3") {
		t.Fatalf("the Deployment lane does not say 3/3 of its pods are ready: %q", dep)
	}
	pods := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, " Running ") && strings.Contains(l, "web-") {
			pods++
			if n := strings.Count(l, "✓"); n != 15 {
				t.Errorf("a Running pod lane shows %d of 15 stages done: %q", n, l)
			}
		}
	}
	if pods != 3 {
		t.Fatalf("want 3 Running pod lanes, got %d:\n%s", pods, s)
	}
	// The events pane shows the cluster's own Kubernetes Events.
	if !strings.Contains(s, "Normal") || !strings.Contains(s, "pod/web-") {
		t.Fatalf("the events pane shows no Kubernetes events of the pods:\n%s", s)
	}

	// Move the selection from the Deployment onto the second pod.
	if !strings.Contains(dep, "▶") {
		t.Fatalf("the selection does not start on the Deployment: %q", dep)
	}
	tm.Keys("j", "j", "j")
	s = tm.WaitFor("the selection on the second pod", 5*time.Second, tmuxtest.Has("4/5"))
	sel := selectedLane(s)
	if !strings.Contains(sel, "web-") || !strings.Contains(sel, "Running") || strings.Contains(sel, "rs/") {
		t.Fatalf("the selected line is not a Running pod: %q", sel)
	}

	// The detail of the selected pod: what the stage does, its events, and
	// the kubectl commands to see the same in a real cluster.
	tm.Keys("Enter")
	s = tm.WaitFor("the detail", 10*time.Second, tmuxtest.Has("kubectl describe pod web-", "Kubernetes events", "Scheduled"))
	if !strings.Contains(s, "authn · kube-apiserver") || !strings.Contains(s, "user kubernetes-admin") &&
		!strings.Contains(s, "system:serviceaccount:kube-system:replicaset-controller") {
		t.Fatalf("the authn detail does not say who created the pod:\n%s", s)
	}
	if !strings.Contains(s, "Successfully assigned default/web-") {
		t.Fatalf("the detail does not show the scheduler's Scheduled event:\n%s", s)
	}
	tm.Keys("Escape")
	tm.WaitFor("back on the pods", 5*time.Second, func(s string) bool {
		return !strings.Contains(s, "kubectl describe") && strings.Contains(s, "deploy/web")
	})

	tm.Keys("?")
	s = tm.WaitFor("the help", 5*time.Second, tmuxtest.Has("Press any key to close.", "break (this pod)", "faster"))
	tm.Keys("x")
	tm.WaitFor("help closed", 5*time.Second, func(s string) bool { return !strings.Contains(s, "Press any key to close.") })

	tm.Keys("q")
	s = tm.WaitFor("podtrace to exit", 30*time.Second, tmuxtest.Has("podtrace exited 0"))
	assertNoLogs(t, s)
	// The logs went to files in the data dir instead.
	for _, f := range []string{"podtrace.log", "etcd.log"} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Errorf("no %s in the data dir: %v", f, err)
		}
	}
}
