package tuie2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/tmuxtest"
)

// mixedManifest has a pod of each kind of outcome a workshop shows: a
// Deployment that runs, an image that does not exist, a crash loop, a
// StatefulSet and a Job that completes.
const mixedManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27"}]
---
apiVersion: v1
kind: Pod
metadata: {name: typo}
spec:
  containers: [{name: app, image: "nginx:1.277"}]
---
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers: [{name: app, image: busybox, command: [sh, -c, "echo bye; exit 1"]}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: busybox, command: [sleep, "3600"]}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: once, image: busybox, command: [echo, done]}]
`

// cols is what one row says in the columns kubectl and podtrace share.
type cols struct{ ready, status, restarts string }

// TestScreenIsKubectl: what the lanes say of each object is what `kubectl
// get` says at the same moment, in the embedded cluster's UI and in
// `attach -A` to that cluster. The screens and kubectl are sampled
// repeatedly while pods start, crash and back off; every row stable on
// kubectl's side across a sample (before and after the screens are read)
// must read the same READY, STATUS and RESTARTS on both screens.
func TestScreenIsKubectl(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	tmuxtest.Need(t)
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	parallelCluster(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "mixed.yaml")
	if err := os.WriteFile(manifest, []byte(mixedManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	tm := startTerm(t, 200, 60, podtracebin.Path(t), "--data-dir", data, "-f", manifest)
	tm.WaitFor("3 Ready nodes", clusterStart, tmuxtest.Has("nodes 3/3"))
	kubeconfig := filepath.Join(data, "kubeconfig")
	attached := startTerm(t, 200, 60, podtracebin.Path(t), "attach", "-A", "--kubeconfig", kubeconfig)
	attached.WaitFor("attach's header", time.Minute, tmuxtest.Has("cluster podtrace"))
	screens := map[string]*term{"embedded": tm, "attach -A": attached}
	check := newScreenCheck(t, kubectl, kubeconfig)
	// Sample until every row on both screens agreed with kubectl once and
	// both showed the crash loop's and the typo's back-off as kubectl did,
	// for a minute at most.
	check.sampleFor(screens, 60*time.Second, func() bool {
		for which := range screens {
			if !check.comparedAs(which, "crash", "CrashLoopBackOff") || !check.comparedAs(which, "typo", "ImagePullBackOff") {
				return false
			}
		}
		return check.covered()
	})
	compared := check.compared
	for which := range screens {
		for _, want := range []string{"typo ", "crash ", "db-1 ", "web "} {
			found := false
			for k := range compared {
				found = found || strings.HasPrefix(k, which+": "+want)
			}
			if !found {
				t.Errorf("%s: %q was never compared (compared: %v)\n%s", which, want, compared, screens[which].Screen())
			}
		}
	}
	t.Logf("compared: %v", compared)
	attached.Keys("q")
	tm.Keys("q")
	tm.WaitFor("podtrace to exit", 30*time.Second, tmuxtest.Has("podtrace exited 0"))
}

// screenCheck compares what screens say of each object with `kubectl get`
// on the same cluster, sample after sample.
type screenCheck struct {
	t                   testing.TB
	kubectl, kubeconfig string
	// compared holds "SCREEN: NAME STATUS READY" for every row compared.
	compared map[string]bool
	// last is what kubectl said at the end of the previous sample.
	last map[string]cols
	// shown holds "SCREEN: NAME" for every row a screen drew of an object
	// kubectl listed, agreed those of them compared at least once.
	shown, agreed map[string]bool
	// samples counts the samples taken.
	samples int
}

// newScreenCheck compares screens with kubectl on the cluster of kubeconfig.
func newScreenCheck(t testing.TB, kubectl, kubeconfig string) *screenCheck {
	return &screenCheck{t: t, kubectl: kubectl, kubeconfig: kubeconfig, compared: map[string]bool{},
		shown: map[string]bool{}, agreed: map[string]bool{}}
}

// sampledKinds are the kinds whose rows the lanes and kubectl share.
const sampledKinds = "pods,deployments,statefulsets,replicasets,jobs"

// get reads every object of sampledKinds in every namespace, by name, in
// one kubectl get.
func (c *screenCheck) get() map[string]cols {
	c.t.Helper()
	b, err := exec.Command(c.kubectl, "--kubeconfig", c.kubeconfig, "get", sampledKinds, "-A", "--no-headers").Output()
	if err != nil {
		c.t.Fatalf("kubectl get %s: %v", sampledKinds, err)
	}
	out := map[string]cols{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l) // NAMESPACE KIND/NAME ...
		if len(f) < 4 {
			continue
		}
		kind, name, ok := strings.Cut(f[1], "/")
		if !ok {
			continue
		}
		kind, _, _ = strings.Cut(kind, ".") // deployment.apps
		out[name] = kubectlCols(kind+"s", append([]string{name}, f[2:]...))
	}
	return out
}

// sample reads kubectl, the screens, then kubectl again: every row stable
// on kubectl's side since the previous sample (a screen may lag kubectl by
// less than one sample, ~2 s, on a loaded machine) must read the same on
// each screen that shows it (a screen without the lanes' header, covered
// by a box, is not compared).
func (c *screenCheck) sample(screens map[string]*term) {
	c.t.Helper()
	before, last := c.get(), c.last
	shown := map[string]string{}
	for which, term := range screens {
		shown[which] = term.Screen()
	}
	after := c.get()
	c.last = after
	c.samples++
	for which, screen := range shown {
		rows, ok := screenRows(screen)
		if !ok {
			continue
		}
		for name, want := range after {
			got, ok := rows[name]
			if !ok {
				continue // scrolled off, or not drawn yet
			}
			c.shown[which+": "+name] = true
			if before[name] != want || last[name] != want {
				continue // changing while sampled, or since the last sample
			}
			c.agreed[which+": "+name] = true
			if got != want && !c.settles(screens[which], name, want) {
				c.t.Errorf("%s: %s says %+v, kubectl %+v\n%s", name, which, got, want, screen)
			}
			c.compared[which+": "+name+" "+want.status+" "+want.ready] = true
		}
	}
}

// settles reports whether tm's row of name comes to read what kubectl
// says just after, within 5 s. Three readings of kubectl that agree do
// not prove a row stayed put between them: in a rollout a Deployment
// reads 2/2, 3/2 for a moment (the new pod Ready, the old one not yet
// deleted), then 2/2 again, and a crash-looping Deployment flaps between
// 0/2 and 1/2 as its pods start and crash; a screen a moment behind
// kubectl can be drawing the other value when sampled, and kubectl may
// have moved on by the time the screen catches up. A screen that keeps
// contradicting kubectl still fails.
func (c *screenCheck) settles(tm *term, name string, want cols) bool {
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if rows, ok := screenRows(tm.Screen()); ok && rows[name] == want {
			now := c.get()[name]
			if now == want {
				return true
			}
			want = now // kubectl moved on: the screen must follow
		}
	}
	return false
}

// covered reports whether, after three samples at least, every row the
// screens drew of an object kubectl lists was compared at least once.
func (c *screenCheck) covered() bool {
	if c.samples < 3 || len(c.shown) == 0 {
		return false
	}
	for row := range c.shown {
		if !c.agreed[row] {
			return false
		}
	}
	return true
}

// comparedAs reports whether screen which was compared with kubectl on
// object name while kubectl said status.
func (c *screenCheck) comparedAs(which, name, status string) bool {
	for k := range c.compared {
		if strings.HasPrefix(k, which+": "+name+" "+status+" ") {
			return true
		}
	}
	return false
}

// sampleFor samples every 2 s for d, or until done (nil for never) holds.
func (c *screenCheck) sampleFor(screens map[string]*term, d time.Duration, done func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && (done == nil || !done()) {
		c.sample(screens)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && (done == nil || !done()); {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// kubectlCols reads one line of `kubectl get KIND --no-headers`.
func kubectlCols(kind string, f []string) cols {
	switch kind {
	case "pods": // NAME READY STATUS RESTARTS AGE; RESTARTS may read "2 (5s ago)"
		return cols{ready: f[1], status: f[2], restarts: f[3]}
	case "replicasets": // NAME DESIRED CURRENT READY AGE
		return cols{ready: f[3] + "/" + f[1]}
	case "jobs": // NAME STATUS COMPLETIONS DURATION AGE
		return cols{ready: f[2], status: f[1]}
	}
	return cols{ready: f[1]} // NAME READY ...
}

// screenRows reads the lanes' rows by the header's columns: for each
// object's name, its READY, STATUS and RESTARTS (an owner's STATUS, "2/4
// ready", is left out: kubectl has none); false when no lane header with
// those columns is on the screen.
func screenRows(screen string) (map[string]cols, bool) {
	lines := strings.Split(screen, "\n")
	head := -1
	for i, l := range lines {
		if strings.Contains(l, " NAME ") && strings.Contains(l, " RESTARTS ") {
			head = i
			break
		}
	}
	if head < 0 {
		return nil, false
	}
	h := lines[head]
	at := func(col string) int { return utf8.RuneCountInString(h[:strings.Index(h, col)]) }
	nameAt, readyAt, statusAt, restartsAt, ageAt := at(" NAME ")+1, at(" READY "), at(" STATUS "), at(" RESTARTS "), at(" AGE ")
	field := func(r []rune, from, to int) string {
		if from >= len(r) {
			return ""
		}
		return strings.TrimSpace(string(r[from:min(to, len(r))]))
	}
	out := map[string]cols{}
	for _, l := range lines[head+1:] {
		l, _, _ = strings.Cut(l, "│") // the detail pane, when open beside
		r := []rune(l)
		if len(r) <= ageAt || strings.TrimSpace(l) == "" {
			break
		}
		name := "" // the first word of NAME (NODE may follow), past the tree's ▾ and deploy/
		for _, f := range strings.Fields(field(r, nameAt, readyAt)) {
			if f != "▾" {
				name = f[strings.LastIndex(f, "/")+1:]
				break
			}
		}
		c := cols{ready: field(r, readyAt, statusAt), status: field(r, statusAt, restartsAt), restarts: field(r, restartsAt, ageAt)}
		if strings.HasSuffix(c.status, " ready") {
			c.status = ""
		}
		out[name] = c
	}
	return out, true
}
