package replicaset

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSlowStartBatch(t *testing.T) {
	tests := []struct {
		name          string
		count, failAt int // failAt: the call number (from 1) that fails first; 0 = none
		wantSuccesses int
		wantCalls     int
		wantErr       bool
	}{
		{"all succeed", 10, 0, 10, 10, false},
		{"first fails", 10, 1, 0, 1, true},
		{"fails in the batch of 4", 10, 5, 6, 7, true}, // batches 1,2,4: calls 4..7 run together, one fails
		{"fails in the batch of 2", 10, 2, 2, 3, true},
		{"fails in the batch of 8", 20, 8, 14, 15, true},     // calls 8..15 form the fourth batch
		{"last batch is the remainder", 10, 10, 9, 10, true}, // 1+2+4 then 3
		{"zero", 0, 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			got, err := slowStartBatch(tt.count, SlowStartInitialBatchSize, func() error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if tt.failAt != 0 && calls == tt.failAt {
					return errors.New("boom")
				}
				return nil
			})
			if got != tt.wantSuccesses || calls != tt.wantCalls || (err != nil) != tt.wantErr {
				t.Fatalf("successes=%d calls=%d err=%v; want %d, %d, err=%v", got, calls, err, tt.wantSuccesses, tt.wantCalls, tt.wantErr)
			}
		})
	}
}

func rsWith(replicas int32) *apps.ReplicaSet {
	return &apps.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default", Generation: 2},
		Spec: apps.ReplicaSetSpec{Replicas: ptr.To(replicas), Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}}}
}

func statusPod(name string, labels map[string]string, readyAgo time.Duration, now time.Time) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if readyAgo >= 0 {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-readyAgo))}}
	}
	return p
}

func TestCalculateStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web := map[string]string{"app": "web"}
	other := map[string]string{"app": "other"}
	tests := []struct {
		name                             string
		replicas, minReady               int32
		pods                             []*v1.Pod
		manageErr                        error
		wantReplicas, wantFully, wantRdy int32
		wantAvail                        int32
		wantFailure                      string // reason of ReplicaFailure, "" for none
	}{
		{"empty", 3, 0, nil, nil, 0, 0, 0, 0, ""},
		{"ready and not", 3, 0, []*v1.Pod{statusPod("a", web, 0, now), statusPod("b", web, -1, now), statusPod("c", other, time.Minute, now)}, nil, 3, 2, 2, 2, ""},
		{"minReadySeconds holds availability", 2, 30, []*v1.Pod{statusPod("a", web, 10*time.Second, now), statusPod("b", web, time.Minute, now)}, nil, 2, 2, 2, 1, ""},
		{"create failure", 3, 0, []*v1.Pod{statusPod("a", web, 0, now)}, errors.New(`pods is forbidden: nope`), 1, 1, 1, 1, "FailedCreate"},
		{"delete failure", 0, 0, []*v1.Pod{statusPod("a", web, 0, now)}, errors.New(`unable to delete pods: nope`), 1, 1, 1, 1, "FailedDelete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := rsWith(tt.replicas)
			rs.Spec.MinReadySeconds = tt.minReady
			s := calculateStatus(rs, tt.pods, tt.manageErr, now)
			if s.Replicas != tt.wantReplicas || s.FullyLabeledReplicas != tt.wantFully || s.ReadyReplicas != tt.wantRdy || s.AvailableReplicas != tt.wantAvail {
				t.Fatalf("status = %d/%d/%d/%d, want %d/%d/%d/%d", s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas,
					tt.wantReplicas, tt.wantFully, tt.wantRdy, tt.wantAvail)
			}
			c := getCondition(s, apps.ReplicaSetReplicaFailure)
			switch {
			case tt.wantFailure == "" && c != nil:
				t.Fatalf("unexpected ReplicaFailure %+v", c)
			case tt.wantFailure != "" && (c == nil || c.Reason != tt.wantFailure || c.Message != tt.manageErr.Error()):
				t.Fatalf("ReplicaFailure = %+v, want reason %s message %q", c, tt.wantFailure, tt.manageErr)
			}
			// A later successful sync clears the condition.
			rs.Status = s
			if tt.wantFailure != "" && getCondition(calculateStatus(rs, tt.pods, nil, now), apps.ReplicaSetReplicaFailure) != nil {
				t.Fatal("ReplicaFailure kept after success")
			}
		})
	}
}

func TestPodsToDelete(t *testing.T) {
	mk := func(name, node string, ph v1.PodPhase, ready bool) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1.PodSpec{NodeName: node}, Status: v1.PodStatus{Phase: ph}}
		if ready {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		}
		return p
	}
	running := mk("running", "n1", v1.PodRunning, true)
	pending := mk("pending", "n2", v1.PodPending, false)
	unscheduled := mk("unscheduled", "", v1.PodPending, false)
	notReady := mk("notready", "n3", v1.PodRunning, false)
	doubled := mk("doubled", "n4", v1.PodRunning, true)
	related := []*v1.Pod{running, pending, notReady, doubled, mk("sibling", "n4", v1.PodRunning, true)}
	pods := []*v1.Pod{running, doubled, notReady, pending, unscheduled}
	got := PodsToDelete(pods, related, 4, metav1.Time{})
	want := []string{"unscheduled", "pending", "notready", "doubled"}
	for i, p := range got {
		if p.Name != want[i] {
			t.Fatalf("victims = %v, want %v", names(got), want)
		}
	}
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprint(p.Name))
	}
	return out
}
