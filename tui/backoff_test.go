package tui

import (
	"strings"
	"testing"
	"time"
)

// TestBackoffsSayWhoseAndWhen reads the kubelet's back-offs as upstream
// states them: a crash loop's period from its waiting message, an image
// pull's from how many pulls failed (10s doubling, at most 5m).
func TestBackoffsSayWhoseAndWhen(t *testing.T) {
	now := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		d    PodDetail
		want string
	}{
		{"crash loop", PodDetail{Waiting: []ContainerWait{{Container: "worker", Reason: "CrashLoopBackOff",
			Message: "back-off 20s restarting failed container=worker pod=worker-1_default(abc)", LastExit: now.Add(-8 * time.Second)}}},
			"next restart of container worker in 12s: the kubelet's crash-loop back-off (20s after the last exit)"},
		{"third failed pull", PodDetail{Waiting: []ContainerWait{{Container: "web", Reason: "ImagePullBackOff"}},
			Events: []K8sEvent{{Reason: "Failed", Message: `Failed to pull image "ngnix:1.27": not found`, Count: 3, LastSeen: now.Add(-10 * time.Second)}}},
			"next pull for container web in 30s: the kubelet's image-pull back-off (40s after failed pull 3)"},
		{"pulls at the cap", PodDetail{Waiting: []ContainerWait{{Container: "web", Reason: "ImagePullBackOff"}},
			Events: []K8sEvent{{Reason: "Failed", Message: `Failed to pull image "x"`, Count: 9, LastSeen: now.Add(-6 * time.Minute)}}},
			"next pull for container web due now: the kubelet's image-pull back-off (5m after failed pull 9)"},
		{"no exit known", PodDetail{Waiting: []ContainerWait{{Container: "w", Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=w"}}},
			"next restart of container w when it ends: the kubelet's crash-loop back-off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs := tt.d.Backoffs()
			if len(bs) != 1 {
				t.Fatalf("%d back-offs, want 1", len(bs))
			}
			if got := bs[0].String(now); got != tt.want {
				t.Errorf("%q\nwant %q", got, tt.want)
			}
		})
	}
	if bs := (PodDetail{Waiting: []ContainerWait{{Reason: "ContainerCreating"}}}).Backoffs(); len(bs) != 0 {
		t.Errorf("ContainerCreating is no back-off: %v", bs)
	}
}

// TestControllerBackoffSaysWhenAndHowToSkip: a refused create's retry is
// the controller's, at the end of its workqueue back-off.
func TestControllerBackoffSaysWhenAndHowToSkip(t *testing.T) {
	now := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	got := ControllerBackoff("replicaset-controller", now.Add(41*time.Second), now)
	want := "in 41s, at 15:00:41: replicaset-controller's workqueue back-off"
	if len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("%q\nwant it to start %q", got, want)
	}
	if got := ControllerBackoff("replicaset-controller", now.Add(-time.Second), now); got[:7] != "due now" {
		t.Errorf("a passed retry: %q", got)
	}
}

// TestSchedulerWaitSaysTheLatestRetry: an unschedulable pod is tried again
// on a cluster event, or after kube-scheduler's 5 minutes.
func TestSchedulerWaitSaysTheLatestRetry(t *testing.T) {
	now := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	got := SchedulerWait(now.Add(-time.Minute), now)
	if !strings.Contains(got, "else in 4m (15:04:00)") || !strings.Contains(got, "> retries now") {
		t.Errorf("%q", got)
	}
}
