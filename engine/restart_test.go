package engine_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/internal/testproc"
)

// TestKubeletRestartOnDataDir stops a cluster with a Running pod
// and starts it again on the same data dir: the pod comes back as after a
// node reboot, through the real kubelet's own reaction to a runtime whose
// sandbox is no longer ready: SandboxChanged, the same pod restarted with
// restartCount 1, Ready again.
func TestKubeletRestartOnDataDir(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	logs.To(io.Discard)
	dir := enginetest.DataDir(t)
	startOn := func() (*engine.Engine, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		e, err := engine.Start(ctx, engine.Config{DataDir: dir, UnsafeNoFsync: true, Nodes: nodes.Defaults(1), Speed: 20, Seed: 1})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return e, cancel
	}
	ctx := context.Background()
	get := func(e *engine.Engine) *corev1.Pod {
		p, err := e.AdminClient().CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return &corev1.Pod{}
		}
		return p
	}

	e, cancel := startOn()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}
	if _, err := e.AdminClient().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, 60*time.Second, "pod web Ready", func() bool { return isReady(get(e)) })
	before := get(e)
	nodeBefore, err := e.AdminClient().CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	e.Close()

	e, cancel = startOn()
	t.Cleanup(func() { cancel(); e.Close() })
	var after *corev1.Pod
	enginetest.WaitFor(t, 90*time.Second, "pod web Ready again with one restart", func() bool {
		after = get(e)
		return isReady(after) && len(after.Status.ContainerStatuses) == 1 && after.Status.ContainerStatuses[0].RestartCount == 1
	})
	if after.UID != before.UID {
		t.Errorf("pod recreated (uid %s, was %s), want the same pod restarted", after.UID, before.UID)
	}
	last := after.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 255 || last.Reason != "Unknown" {
		t.Errorf("last termination %+v, want exit 255, reason Unknown (the container died with the node)", last)
	}
	// The node itself: the same machine, booted again, as the kubelet
	// reports a rebooted node.
	nodeAfter, err := e.AdminClient().CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	was, is := nodeBefore.Status.NodeInfo, nodeAfter.Status.NodeInfo
	if is.MachineID == "" || is.MachineID != was.MachineID || is.SystemUUID != was.SystemUUID {
		t.Errorf("machine ID %q, system UUID %q; want the node's own, %q and %q", is.MachineID, is.SystemUUID, was.MachineID, was.SystemUUID)
	}
	if is.BootID == "" || is.BootID == was.BootID {
		t.Errorf("boot ID %q after the restart, was %q: want a new one", is.BootID, was.BootID)
	}
	enginetest.WaitFor(t, 10*time.Second, "the kubelet's Rebooted event", func() bool {
		evs, err := e.AdminClient().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=node-1,reason=Rebooted"})
		return err == nil && len(evs.Items) == 1 && evs.Items[0].Type == corev1.EventTypeWarning &&
			evs.Items[0].Message == "Node node-1 has been rebooted, boot id: "+is.BootID
	})
	enginetest.WaitFor(t, 10*time.Second, "the kubelet's SandboxChanged event", func() bool {
		evs, err := e.AdminClient().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		if err != nil {
			return false
		}
		for _, ev := range evs.Items {
			if ev.Reason == "SandboxChanged" && ev.Message == "Pod sandbox changed, it will be killed and re-created." {
				return true
			}
		}
		return false
	})
	// The node kept its images, as containerd's content store does: the
	// kubelet finds nginx:1.27 there and does not pull it again.
	evs, err := e.AdminClient().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=Pulled"})
	if err != nil {
		t.Fatal(err)
	}
	present := false
	for _, ev := range evs.Items {
		present = present || strings.HasPrefix(ev.Message, `Container image "nginx:1.27" already present on machine`)
	}
	if !present {
		t.Errorf("after the restart the kubelet did not find nginx:1.27 on the node; its Pulled events: %v", evs.Items)
	}
}

// TestKubeletCrashLoopBackOffCap caps the real kubelet's crash-loop
// back-off at 2s (its crashLoopBackOff.maxContainerRestartPeriod): four
// restarts come within 30s (with upstream's 10s, 20s, 40s, 80s they take
// 150s), the kubelet's BackOff events say it is backing off, and any
// CrashLoopBackOff state written meanwhile (a 2s wait may pass before the
// kubelet writes it) names the 2s back-off.
func TestKubeletCrashLoopBackOffCap(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	logs.To(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.Start(ctx, engine.Config{DataDir: enginetest.DataDir(t), UnsafeNoFsync: true, Nodes: nodes.Defaults(1), Speed: 20, Seed: 1,
		MaxContainerRestartPeriod: 2 * time.Second})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); e.Close() })
	pods := e.AdminClient().CoreV1().Pods("default")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: "default"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "worker", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo boom; exit 1"}}}}}
	if _, err := pods.Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, 30*time.Second, "4 restarts", func() bool {
		p, err := pods.Get(context.Background(), "crash", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" &&
			!strings.HasPrefix(w.Message, "back-off 2s restarting failed container=worker pod=crash_default(") {
			t.Errorf("CrashLoopBackOff message %q, want the kubelet's back-off 2s", w.Message)
		}
		return cs.RestartCount >= 4
	})
	evs, err := e.AdminClient().CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=crash,reason=BackOff"})
	if err != nil || len(evs.Items) == 0 || !strings.HasPrefix(evs.Items[0].Message, "Back-off restarting failed container worker in pod crash_default(") {
		t.Errorf("the kubelet's BackOff events: %v %v", evs, err)
	}
}
