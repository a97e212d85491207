package deployment

import (
	"strings"
	"testing"
	"time"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func rollingDeployment(replicas int32, surge, unavailable intstr.IntOrString) *apps.Deployment {
	return &apps.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 1},
		Spec: apps.DeploymentSpec{Replicas: ptr.To(replicas), ProgressDeadlineSeconds: ptr.To[int32](600),
			Strategy: apps.DeploymentStrategy{Type: apps.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &apps.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}}},
	}
}

func TestFenceposts(t *testing.T) {
	pct := intstr.FromString
	n := intstr.FromInt32
	tests := []struct {
		replicas                  int32
		surge, unavailable        intstr.IntOrString
		wantSurge, wantUnavailabl int32
	}{
		{3, pct("25%"), pct("25%"), 1, 0}, // surge rounds up, unavailable down
		{10, pct("25%"), pct("25%"), 3, 2},
		{4, n(0), n(0), 0, 1}, // both zero: one may be unavailable
		{5, n(2), n(1), 2, 1},
		{2, n(0), n(5), 0, 2}, // capped at replicas
	}
	for _, tt := range tests {
		d := rollingDeployment(tt.replicas, tt.surge, tt.unavailable)
		if s, u := maxSurge(d), maxUnavailable(d); s != tt.wantSurge || u != tt.wantUnavailabl {
			t.Errorf("%d replicas %s/%s: surge %d unavailable %d, want %d %d", tt.replicas, tt.surge.String(), tt.unavailable.String(), s, u, tt.wantSurge, tt.wantUnavailabl)
		}
	}
}

func rsOf(name string, spec, available int32) *apps.ReplicaSet {
	return &apps.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apps.ReplicaSetSpec{Replicas: ptr.To(spec)}, Status: apps.ReplicaSetStatus{Replicas: spec, AvailableReplicas: available, ReadyReplicas: available}}
}

func TestNewRSNewReplicas(t *testing.T) {
	tests := []struct {
		name     string
		d        *apps.Deployment
		old, new int32
		want     int32
	}{
		{"fresh rolling", rollingDeployment(3, intstr.FromString("25%"), intstr.FromString("25%")), 0, 0, 3},
		{"surge one over old", rollingDeployment(3, intstr.FromString("25%"), intstr.FromString("25%")), 3, 0, 1},
		{"at max total", rollingDeployment(3, intstr.FromString("25%"), intstr.FromString("25%")), 3, 1, 1},
		{"surge two", rollingDeployment(10, intstr.FromInt32(2), intstr.FromInt32(0)), 10, 0, 2},
	}
	for _, tt := range tests {
		newRS := rsOf("new", tt.new, 0)
		got, err := newRSNewReplicas(tt.d, []*apps.ReplicaSet{rsOf("old", tt.old, tt.old), newRS}, newRS)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
	recreate := rollingDeployment(4, intstr.FromInt32(1), intstr.FromInt32(1))
	recreate.Spec.Strategy = apps.DeploymentStrategy{Type: apps.RecreateDeploymentStrategyType}
	if got, _ := newRSNewReplicas(recreate, nil, rsOf("new", 0, 0)); got != 4 {
		t.Errorf("recreate: got %d, want 4", got)
	}
}

func TestReplicaSetName(t *testing.T) {
	if got := ReplicaSetName("web", "5d8f9c7b6"); got != "web-5d8f9c7b6" {
		t.Fatalf("got %q", got)
	}
	long := strings.Repeat("a", 260)
	if got := ReplicaSetName(long, "5d8f9c7b6"); len(got) != 253 || !strings.HasSuffix(got, "a-5d8f9c7b6") {
		t.Fatalf("long name: len %d %q", len(got), got[240:])
	}
}

func TestRolloutStatusConditions(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name                   string
		replicas               int32
		oldStatus              apps.DeploymentStatus
		progressing            *apps.DeploymentCondition
		rss                    []*apps.ReplicaSet // the last is the new one
		wantAvail              v1.ConditionStatus
		wantAvailReason        string
		wantProgReason, wantPM string
	}{
		{
			name: "fresh rollout, nothing available", replicas: 3,
			progressing: newCondition(apps.DeploymentProgressing, v1.ConditionTrue, NewReplicaSetReason, `Created new replica set "web-abc"`, now),
			oldStatus:   apps.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3},
			rss:         []*apps.ReplicaSet{rsOf("web-abc", 3, 0)},
			wantAvail:   v1.ConditionFalse, wantAvailReason: MinimumReplicasUnavailable,
			wantProgReason: NewReplicaSetReason, wantPM: `Created new replica set "web-abc"`,
		},
		{
			name: "pods created", replicas: 3,
			progressing: newCondition(apps.DeploymentProgressing, v1.ConditionTrue, NewReplicaSetReason, `Created new replica set "web-abc"`, now),
			rss:         []*apps.ReplicaSet{rsOf("web-abc", 3, 0)},
			wantAvail:   v1.ConditionFalse, wantAvailReason: MinimumReplicasUnavailable,
			wantProgReason: ReplicaSetUpdatedReason, wantPM: `ReplicaSet "web-abc" is progressing.`,
		},
		{
			name: "pods became available", replicas: 3,
			progressing: newCondition(apps.DeploymentProgressing, v1.ConditionTrue, NewReplicaSetReason, `Created new replica set "web-abc"`, now),
			oldStatus:   apps.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3},
			rss:         []*apps.ReplicaSet{rsOf("web-abc", 3, 3)},
			wantAvail:   v1.ConditionTrue, wantAvailReason: MinimumReplicasAvailable,
			wantProgReason: NewRSAvailableReason, wantPM: `ReplicaSet "web-abc" has successfully progressed.`,
		},
		{
			name: "rolling: new pods ready, old still there", replicas: 3,
			progressing: newCondition(apps.DeploymentProgressing, v1.ConditionTrue, NewReplicaSetReason, `Created new replica set "web-new"`, now),
			oldStatus:   apps.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, AvailableReplicas: 3},
			rss:         []*apps.ReplicaSet{rsOf("web-old", 3, 3), rsOf("web-new", 1, 1)},
			wantAvail:   v1.ConditionTrue, wantAvailReason: MinimumReplicasAvailable,
			wantProgReason: ReplicaSetUpdatedReason, wantPM: `ReplicaSet "web-new" is progressing.`,
		},
		{
			name: "deadline passed", replicas: 3,
			progressing: newCondition(apps.DeploymentProgressing, v1.ConditionTrue, ReplicaSetUpdatedReason, `ReplicaSet "web-abc" is progressing.`, now.Add(-11*time.Minute)),
			oldStatus:   apps.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3},
			rss:         []*apps.ReplicaSet{rsOf("web-abc", 3, 0)},
			wantAvail:   v1.ConditionFalse, wantAvailReason: MinimumReplicasUnavailable,
			wantProgReason: TimedOutReason, wantPM: `ReplicaSet "web-abc" has timed out progressing.`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := rollingDeployment(tt.replicas, intstr.FromString("25%"), intstr.FromString("25%"))
			d.Status = tt.oldStatus
			d.Status.Conditions = []apps.DeploymentCondition{*tt.progressing}
			s := rolloutStatus(tt.rss, tt.rss[len(tt.rss)-1], d, now)
			a := getCondition(s, apps.DeploymentAvailable)
			if a == nil || a.Status != tt.wantAvail || a.Reason != tt.wantAvailReason {
				t.Fatalf("Available = %+v", a)
			}
			if tt.wantAvail == v1.ConditionTrue && a.Message != "Deployment has minimum availability." ||
				tt.wantAvail == v1.ConditionFalse && a.Message != "Deployment does not have minimum availability." {
				t.Fatalf("Available message %q", a.Message)
			}
			p := getCondition(s, apps.DeploymentProgressing)
			if p == nil || p.Reason != tt.wantProgReason || p.Message != tt.wantPM {
				t.Fatalf("Progressing = %+v, want %s %q", p, tt.wantProgReason, tt.wantPM)
			}
			var newRS *apps.ReplicaSet = tt.rss[len(tt.rss)-1]
			if s.UpdatedReplicas != newRS.Status.Replicas || s.ObservedGeneration != 1 {
				t.Fatalf("status = %+v", s)
			}
		})
	}
}

func TestSetNewReplicaSetAnnotationsKeepsHistory(t *testing.T) {
	d := rollingDeployment(3, intstr.FromString("25%"), intstr.FromString("25%"))
	d.Annotations = map[string]string{"team": "a", RevisionAnnotation: "9"}
	rs := &apps.ReplicaSet{}
	if !setNewReplicaSetAnnotations(d, rs, "1", false) {
		t.Fatal("no change reported")
	}
	want := map[string]string{"team": "a", RevisionAnnotation: "1", DesiredReplicasAnnotation: "3", MaxReplicasAnnotation: "4"}
	for k, v := range want {
		if rs.Annotations[k] != v {
			t.Errorf("%s = %q, want %q", k, rs.Annotations[k], v)
		}
	}
	setNewReplicaSetAnnotations(d, rs, "3", true)
	if rs.Annotations[RevisionAnnotation] != "3" || rs.Annotations[RevisionHistoryAnnotation] != "1" {
		t.Fatalf("after rollback to it: %v", rs.Annotations)
	}
}
