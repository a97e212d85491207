package upstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine/controlplane"
)

// A control plane started again on the same data dir in the same process
// (as tests and a restart do) comes up with the first one's state, and its
// controllers work: upstream's process-wide registries (configz, informer
// names) must not stop the next one, even when the one before was stopped
// as soon as it was up, while kube-controller-manager was still building
// its controllers.
func TestControlPlaneRestartsOnItsDataDir(t *testing.T) {
	dir := t.TempDir()
	var uid string
	for i := 0; i < 3; i++ {
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		cp, err := controlplane.Start(ctx, controlplane.Config{DataDir: dir, UnsafeNoFsync: true})
		if err != nil {
			cancel()
			t.Fatalf("start %d: %v", i+1, err)
		}
		t.Logf("start %d: ready with a default service account after %s", i+1, time.Since(start).Round(time.Millisecond))
		client := kubernetes.NewForConfigOrDie(cp.AdminConfig())
		ns, err := client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && string(ns.UID) != uid {
			t.Errorf("namespace default has UID %s after restart %d, was %s: state not kept", ns.UID, i, uid)
		}
		uid = string(ns.UID)
		if i == 1 {
			// Stopped at once: the next start finds out whether this
			// controller manager let go of its informers' name.
			cancel()
			if err := cp.Close(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// The serviceaccount controller gives a new namespace its default
		// service account: kube-controller-manager runs.
		name := fmt.Sprintf("restart-%d", i+1)
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Errorf("start %d: namespace %s has no default service account after 30s: kube-controller-manager is not running", i+1, name)
		}
		cancel()
		if err := cp.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
