package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/tui"
)

// TestWatchedObjects: run --headless waits for the workloads and pods of the
// manifests, in the default namespace unless they name one, and for
// nothing else.
func TestWatchedObjects(t *testing.T) {
	objs, err := apply.Parse([]byte(`apiVersion: v1
kind: Service
metadata: {name: db}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: batch}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
apiVersion: v1
kind: Pod
metadata: {name: debug}
`), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range watchedObjects(objs) {
		got = append(got, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
	}
	if want := "StatefulSet default/db, Job batch/migrate, Pod default/debug"; strings.Join(got, ", ") != want {
		t.Fatalf("watched %q, want %q", strings.Join(got, ", "), want)
	}
}

// TestRunHeadlessStatefulSet: a manifest with only a StatefulSet (and its
// Service) ends with exit 0 only once both its pods, created one after the
// other, are Ready.
func TestRunHeadlessStatefulSet(t *testing.T) {
	t.Parallel()
	bin := podtracebin.Path(t)
	manifest := filepath.Join(t.TempDir(), "db.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        readinessProbe:
          httpGet: {path: /, port: 80}
          periodSeconds: 2
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, bin, "run", "-f", manifest, "--headless", "--nodes", "1", "--speed", "20", "--timeout", "3m")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	ready := map[string]bool{}
	evs, err := tui.ReadEvents(strings.NewReader(out))
	if err != nil {
		t.Fatalf("not JSON event lines: %v", err)
	}
	for _, e := range evs {
		if e.Kind == stages.KindPod && e.Stage == stages.Ready && e.Status == stages.Succeeded {
			ready[e.Pod] = true
		}
	}
	if !ready["db-0"] || !ready["db-1"] {
		t.Fatalf("exit 0 before both pods were Ready: ready %v", ready)
	}
}
