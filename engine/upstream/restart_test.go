package upstream_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine/controlplane"
)

// A control plane started again on the same data dir in the same process
// (as tests and a restart do) comes up with the first one's state:
// upstream's process-wide registries (configz, informer names) must not
// stop the second.
func TestControlPlaneRestartsOnItsDataDir(t *testing.T) {
	dir := t.TempDir()
	var uid string
	for i := 0; i < 2; i++ {
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		cp, err := controlplane.Start(ctx, controlplane.Config{DataDir: dir, UnsafeNoFsync: true})
		if err != nil {
			cancel()
			t.Fatalf("start %d: %v", i+1, err)
		}
		t.Logf("start %d: ready with a default service account after %s", i+1, time.Since(start).Round(time.Millisecond))
		ns, err := kubernetes.NewForConfigOrDie(cp.AdminConfig()).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && string(ns.UID) != uid {
			t.Errorf("namespace default has UID %s after the restart, was %s: state not kept", ns.UID, uid)
		}
		uid = string(ns.UID)
		cancel()
		if err := cp.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
