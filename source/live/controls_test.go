package live

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"golang.org/x/net/http2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// TestFastForwardKeyRetriesScheduling presses ">" for a pod no node can
// take: kube-scheduler would retry it only after a cluster event or its
// 5-minute flush; the key activates it, so another attempt (another
// FailedScheduling) follows at once.
func TestFastForwardKeyRetriesScheduling(t *testing.T) {
	ctx := context.Background()
	e := startOneNode(t)
	cc := paceControl{e}
	sub := e.Hub.Subscribe()
	defer sub.Close()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}}}}}}
	if _, err := e.AdminClient().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	deadline := time.After(30 * time.Second)
	for attempts < 3 {
		select {
		case ev := <-sub.C():
			if ev.Pod == "big" && ev.Stage == stages.Schedule && ev.Reason == "FailedScheduling" {
				attempts++
			}
		case <-time.After(500 * time.Millisecond):
			if attempts > 0 { // the first attempt failed: press ">"
				// (it may find the pod mid-attempt, with nothing pending)
				if ran, err := cc.FastForward(); err == nil && ran != "1 pending pod back in kube-scheduler's queue" {
					t.Errorf("fast-forward says %q", ran)
				}
			}
		case <-deadline:
			t.Fatalf("%d scheduling attempts in 30s; want each > to retry at once", attempts)
		}
	}
}

// TestPauseKeyHoldsEveryGate presses space while a pod is created: the
// create waits at its first gate, shown as Paused, and neither it nor the
// pod goes on until space is pressed again; then the pod is scheduled.
func TestPauseKeyHoldsEveryGate(t *testing.T) {
	ctx := context.Background()
	e := startOneNode(t)
	cc := paceControl{e}
	sub := e.Hub.Subscribe()
	defer sub.Close()
	if err := cc.SetPaused(true); err != nil || !cc.Paused() {
		t.Fatalf("SetPaused(true) = %v, Paused() = %v", err, cc.Paused())
	}
	created := make(chan error, 1)
	go func() {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
		_, err := e.AdminClient().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		created <- err
	}()
	deadline := time.After(30 * time.Second)
	for paused := false; !paused; {
		select {
		case ev := <-sub.C():
			paused = ev.Pod == "held" && ev.Status == stages.Waiting && ev.Reason == "Paused"
		case <-deadline:
			t.Fatal("no Paused stage event for the pod within 30s")
		}
	}
	select {
	case err := <-created:
		t.Fatalf("the create returned (%v) while paused", err)
	case <-time.After(time.Second):
	}
	// A request with a timeout meets kube-apiserver's own while held, and
	// what it asked for is not done. kube-apiserver answers Timeout, or,
	// when the held handler has begun its own answer first (a race a loaded
	// machine loses now and then), resets the stream, as its timeout
	// filter says it does (k8s.io/apiserver/pkg/server/filters/timeout.go).
	late := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
	noClientTimeout := e.AdminConfig()
	noClientTimeout.Timeout = 0 // not the client's own: ?timeout=2s alone
	wait, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	err := kubernetes.NewForConfigOrDie(noClientTimeout).CoreV1().RESTClient().Post().Namespace("default").Resource("pods").
		Param("timeout", "2s").Body(late).Do(wait).Error()
	var reset http2.StreamError
	if !apierrors.IsTimeout(err) && !(errors.As(err, &reset) && reset.Code == http2.ErrCodeInternal) {
		t.Fatalf("a create with ?timeout=2s while paused: %v, want kube-apiserver's Timeout", err)
	}
	if err := cc.SetPaused(false); err != nil || cc.Paused() {
		t.Fatalf("SetPaused(false) = %v, Paused() = %v", err, cc.Paused())
	}
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	waittest.Eventually(t, "the held pod scheduled once resumed", 30*time.Second, func() (bool, string) {
		p, err := e.AdminClient().CoreV1().Pods("default").Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName != "", "not bound to a node"
	})
	if _, err := e.AdminClient().CoreV1().Pods("default").Get(ctx, "late", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod whose create timed out while paused: %v, want NotFound", err)
	}
}

// startOneNode starts a one-node engine on real time until the test ends.
func startOneNode(t *testing.T) *engine.Engine {
	t.Helper()
	logs.To(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.Start(ctx, engine.Config{DataDir: enginetest.DataDir(t), UnsafeNoFsync: true, Nodes: nodes.Defaults(1), Speed: 1})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); e.Close() })
	return e
}
