package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func quota(name string, hard, used corev1.ResourceList) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if used != nil {
		q.Status = corev1.ResourceQuotaStatus{Hard: hard.DeepCopy(), Used: used}
	}
	return q
}

func usedOf(t *testing.T, s *memStore, name string) corev1.ResourceList {
	t.Helper()
	o, err := s.Get(context.Background(), "resourcequotas", "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return o.(*corev1.ResourceQuota).Status.Used
}

func TestResourceQuotaMessages(t *testing.T) {
	tests := []struct {
		name  string
		quota *corev1.ResourceQuota
		pod   *corev1.Pod
		want  string
	}{
		{"exceeded requests.cpu", quota("compute", list("requests.cpu", "2"), list("requests.cpu", "1")), newPod("default", "web", "2"),
			`pods "web" is forbidden: exceeded quota: compute, requested: requests.cpu=2, used: requests.cpu=1, limited: requests.cpu=2`},
		{"exceeded pods count", quota("pods", list("pods", "2"), list("pods", "2")), newPod("default", "web", ""),
			`pods "web" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`},
		{"two resources exceeded", quota("compute", list("cpu", "1", "count/pods", "1"), list("cpu", "500m", "count/pods", "1")), newPod("default", "web", "1"),
			`pods "web" is forbidden: exceeded quota: compute, requested: count/pods=1,cpu=1, used: count/pods=1,cpu=500m, limited: count/pods=1,cpu=1`},
		{"must specify", quota("compute", list("requests.cpu", "2", "limits.memory", "1Gi"), list("requests.cpu", "0", "limits.memory", "0")), newPod("default", "web", ""),
			`pods "web" is forbidden: failed quota: compute: must specify limits.memory for: app; requests.cpu for: app`},
		{"fits", quota("compute", list("requests.cpu", "2"), list("requests.cpu", "1")), newPod("default", "web", "1"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newMemStore(map[string][]runtime.Object{"resourcequotas": {tt.quota}})
			err := NewResourceQuota(s).Validate(context.Background(), createPod(tt.pod))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want || !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
			if s.updates != 0 {
				t.Errorf("a rejected create charged the quota (%d updates)", s.updates)
			}
		})
	}
}

func TestResourceQuotaChargesAndReleases(t *testing.T) {
	s := newMemStore(map[string][]runtime.Object{"resourcequotas": {quota("compute", list("requests.cpu", "2", "pods", "5"), nil)}})
	rq := NewResourceQuota(s)
	ctx := context.Background()

	first := newPod("default", "a", "1")
	if err := rq.Validate(ctx, createPod(first)); err != nil {
		t.Fatal(err)
	}
	s.create("pods", first)
	u := usedOf(t, s, "compute")
	if qty(u, "requests.cpu") != "1" || qty(u, "pods") != "1" {
		t.Fatalf("used after first pod = %v", u)
	}

	dry := createPod(newPod("default", "b", "1"))
	dry.DryRun = true
	if err := rq.Validate(ctx, dry); err != nil {
		t.Fatal(err)
	}
	if got := qty(usedOf(t, s, "compute"), "requests.cpu"); got != "1" {
		t.Errorf("dry run charged the quota: used requests.cpu=%v", got)
	}

	second := newPod("default", "b", "1")
	if err := rq.Validate(ctx, createPod(second)); err != nil {
		t.Fatal(err)
	}
	s.create("pods", second)
	err := rq.Validate(ctx, createPod(newPod("default", "c", "500m")))
	want := `pods "c" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=2, limited: requests.cpu=2`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}

	s.remove("pods", "default", "a")
	if err := rq.ReleaseOnDelete(ctx, schema.GroupResource{Resource: "pods"}, first); err != nil {
		t.Fatal(err)
	}
	if u := usedOf(t, s, "compute"); qty(u, "requests.cpu") != "1" || qty(u, "pods") != "1" {
		t.Errorf("used after release = %v", u)
	}
	if err := rq.Validate(ctx, createPod(newPod("default", "c", "500m"))); err != nil {
		t.Errorf("create after release: %v", err)
	}

	// Recalculate recounts from the stored pods: only b is stored, c never persisted.
	if err := rq.Recalculate(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if u := usedOf(t, s, "compute"); qty(u, "requests.cpu") != "1" || qty(u, "pods") != "1" {
		t.Errorf("used after recalculate = %v", u)
	}
}

func TestResourceQuotaObjectCounts(t *testing.T) {
	s := newMemStore(map[string][]runtime.Object{"resourcequotas": {quota("objects", list("count/deployments.apps", "1", "configmaps", "1"), nil)}})
	rq := NewResourceQuota(s)
	ctx := context.Background()
	deployGVR := appsv1.SchemeGroupVersion.WithResource("deployments")
	create := func(name string) error {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		err := rq.Validate(ctx, &Attributes{Operation: Create, Kind: appsv1.SchemeGroupVersion.WithKind("Deployment"), Resource: deployGVR, Namespace: "default", Name: name, Object: d})
		if err == nil {
			s.create("deployments", d)
		}
		return err
	}
	if err := create("one"); err != nil {
		t.Fatal(err)
	}
	err := create("two")
	want := `deployments.apps "two" is forbidden: exceeded quota: objects, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"}}
	cmAttrs := &Attributes{Operation: Create, Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Namespace: "default", Name: "cfg", Object: cm}
	if err := rq.Validate(ctx, cmAttrs); err != nil {
		t.Fatal(err)
	}
	if u := usedOf(t, s, "objects"); qty(u, "configmaps") != "1" {
		t.Errorf("configmaps used = %v", u)
	}
}

// TestResourceQuotaConcurrentNoOverAdmission admits 50 pods at once, each
// through its own plugin instance (as separate API servers would), against a
// quota of 10 pods: exactly 10 must pass and status.used must say 10.
func TestResourceQuotaConcurrentNoOverAdmission(t *testing.T) {
	s := newMemStore(map[string][]runtime.Object{"resourcequotas": {quota("pods", list("pods", "10", "requests.cpu", "100"), list("pods", "0", "requests.cpu", "0"))}})
	var calls atomic.Int32
	s.beforeUpdate = func(runtime.Object) error { calls.Add(1); return nil }
	// Hold every reader after its read, so writes based on stale reads
	// conflict and the retry path runs.
	s.afterList = func(string) error { time.Sleep(time.Millisecond); return nil }
	var admitted atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rq := NewResourceQuota(s)
			rq.Retries = 100
			err := rq.Validate(context.Background(), createPod(newPod("default", fmt.Sprintf("p%d", i), "1")))
			switch {
			case err == nil:
				admitted.Add(1)
			case apierrors.IsForbidden(err):
			default:
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	if got := admitted.Load(); got != 10 {
		t.Errorf("admitted %d pods, want 10", got)
	}
	if u := usedOf(t, s, "pods"); qty(u, "pods") != "10" || qty(u, "requests.cpu") != "10" {
		t.Errorf("used = %v, want pods=10 requests.cpu=10", u)
	}
	if int(calls.Load()) <= s.updates {
		t.Errorf("no conflicting updates happened (%d calls, %d updates); the test did not exercise concurrent charging", calls.Load(), s.updates)
	}
}

func TestResourceQuotaListError(t *testing.T) {
	s := newMemStore(nil)
	s.afterList = func(string) error { return errors.New("etcdserver: request timed out") }
	err := NewResourceQuota(s).Validate(context.Background(), createPod(newPod("default", "web", "")))
	if !apierrors.IsInternalError(err) {
		t.Errorf("err = %v, want 500", err)
	}
}

func qty(l corev1.ResourceList, name string) string {
	q, ok := l[corev1.ResourceName(name)]
	if !ok {
		return "<none>"
	}
	return q.String()
}

// TestResourceQuotaRetriesOnConflict has another writer charge the quota
// between this plugin's read and its write: the plugin must re-read and
// re-evaluate, admitting while there is room and refusing once there is not.
func TestResourceQuotaRetriesOnConflict(t *testing.T) {
	s := newMemStore(map[string][]runtime.Object{"resourcequotas": {quota("pods", list("pods", "2"), list("pods", "0"))}})
	rq := NewResourceQuota(s)
	otherWriter := func(used string) func(runtime.Object) error {
		fired := false
		return func(runtime.Object) error {
			if !fired {
				fired = true
				s.create("resourcequotas", quota("pods", list("pods", "2"), list("pods", used)))
			}
			return nil
		}
	}
	s.beforeUpdate = otherWriter("1")
	if err := rq.Validate(context.Background(), createPod(newPod("default", "a", ""))); err != nil {
		t.Fatalf("err = %v", err)
	}
	if got := qty(usedOf(t, s, "pods"), "pods"); got != "2" {
		t.Errorf("used pods = %s, want 2 (other writer's 1 + ours)", got)
	}

	s.create("resourcequotas", quota("pods", list("pods", "2"), list("pods", "1")))
	s.beforeUpdate = otherWriter("2")
	err := rq.Validate(context.Background(), createPod(newPod("default", "b", "")))
	want := `pods "b" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, limited: pods=2`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestChainObjectDeletedReleasesQuota(t *testing.T) {
	s := newMemStore(map[string][]runtime.Object{
		"namespaces":      {namespace("default", corev1.NamespaceActive)},
		"serviceaccounts": {serviceAccount("default", "default")},
		"resourcequotas":  {quota("pods", list("pods", "1"), nil)},
	})
	c := New(s)
	ctx := context.Background()
	first := newPod("default", "a", "")
	if err := c.Admit(ctx, createPod(first)); err != nil {
		t.Fatal(err)
	}
	s.create("pods", first)
	err := c.Admit(ctx, createPod(newPod("default", "b", "")))
	if RejectedBy(err) != "ResourceQuota" {
		t.Fatalf("second pod: err %v by %q, want a ResourceQuota rejection", err, RejectedBy(err))
	}
	s.remove("pods", "default", "a")
	if err := c.ObjectDeleted(ctx, schema.GroupResource{Resource: "pods"}, first); err != nil {
		t.Fatal(err)
	}
	if err := c.Admit(ctx, createPod(newPod("default", "b", ""))); err != nil {
		t.Errorf("after the first pod was deleted: %v", err)
	}
	// b was admitted but never stored: recounting frees its charge again.
	if err := c.Recalculate(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if got := qty(usedOf(t, s, "pods"), "pods"); got != "0" {
		t.Errorf("used pods after recalculate = %s, want 0", got)
	}
}
