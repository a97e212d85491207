package main

import (
	"context"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/kubelet/nodes"
	"github.com/podtrace/podtrace/engine/logs"
	"github.com/podtrace/podtrace/stages"
)

// TestFastForwardKeyWalksThePullBackOff presses the UI's fast-forward
// (">") on a real-time clock: each press jumps to the next pull retry, so
// the 10s, 20s, ... 5m back-off of a bad image takes a few presses. The
// engine clock drives podtrace's own kubelet's back-offs (the real
// kubelet's run on real time).
func TestFastForwardKeyWalksThePullBackOff(t *testing.T) {
	ctx := context.Background()
	e := startOneNode(t, engine.HandWrittenKubelet)
	cc := clockControl{e}
	cc.Paused() // the UI's first frame
	sub := e.Hub.Subscribe()
	defer sub.Close()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "typo", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ngnix:1.27"}}}}
	if err := waitNodesReady(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AdminClient().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second}
	var got []time.Duration
	jumps := 0
	deadline := time.After(20 * time.Second)
	for len(got) < len(want) {
		select {
		case ev := <-sub.C():
			if ev.Pod == "typo" && ev.Stage == stages.Pull && ev.Reason == "ErrImagePull" && ev.NextTry != nil {
				got = append(got, ev.NextTry.Sub(ev.Time).Round(time.Second))
			}
		case <-time.After(100 * time.Millisecond):
			if len(got) > 0 { // the first pull failed: press ">"
				if d, err := cc.FastForward(); err == nil && d >= time.Second {
					jumps++ // a jump to a retry; smaller ones pass a pull in progress
				}
			}
		case <-deadline:
			t.Fatalf("back-offs %v after %d jumps in 20s, want %v", got, jumps, want)
		}
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("back-offs %v, want %v", got, want)
		}
	}
	if jumps != len(want)-1 {
		t.Fatalf("%d jumps for %d retries: > does not jump to the next retry", jumps, len(want)-1)
	}
}

// TestFastForwardKeyRetriesScheduling presses ">" for a pod no node can
// take: kube-scheduler would retry it only after a cluster event or its
// 5-minute flush; the key activates it, so another attempt (another
// FailedScheduling) follows at once.
func TestFastForwardKeyRetriesScheduling(t *testing.T) {
	ctx := context.Background()
	e := startOneNode(t, engine.UpstreamKubelet)
	cc := clockControl{e}
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
				_, _ = cc.FastForward()
			}
		case <-deadline:
			t.Fatalf("%d scheduling attempts in 30s; want each > to retry at once", attempts)
		}
	}
}

// startOneNode starts a one-node engine on real time, its nodes running
// kubelet, until the test ends.
func startOneNode(t *testing.T, kubelet engine.KubeletKind) *engine.Engine {
	t.Helper()
	logs.To(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.Start(ctx, engine.Config{DataDir: t.TempDir(), UnsafeNoFsync: true, Nodes: nodes.Defaults(1), Speed: 1,
		Kubelet: kubelet})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); e.Close() })
	return e
}
