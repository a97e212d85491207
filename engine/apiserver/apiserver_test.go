package apiserver_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/stages"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
}

func TestPodLifecycleThroughAPI(t *testing.T) {
	env := enginetest.Start(t)
	ctx := context.Background()
	c := env.Admin()
	created, err := c.CoreV1().Pods("default").Create(ctx, pod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.Status.Phase != corev1.PodPending {
		t.Fatalf("created pod lacks server fields: %+v", created.ObjectMeta)
	}
	if created.Spec.RestartPolicy != corev1.RestartPolicyAlways || created.Spec.SchedulerName != "default-scheduler" {
		t.Fatalf("defaults not applied: %+v", created.Spec)
	}
	// Stored where kube-apiserver stores it, as Kubernetes protobuf.
	kv, err := env.Etcd.Client.Get(ctx, "/registry/pods/default/web")
	if err != nil || len(kv.Kvs) != 1 {
		t.Fatalf("etcd key: %v %v", kv, err)
	}
	if !bytes.HasPrefix(kv.Kvs[0].Value, []byte("k8s\x00")) {
		t.Fatalf("value is not Kubernetes protobuf: %q", kv.Kvs[0].Value[:8])
	}
	if got := created.ResourceVersion; got != itoa(kv.Kvs[0].ModRevision) {
		t.Fatalf("resourceVersion %s, etcd mod revision %d", got, kv.Kvs[0].ModRevision)
	}
	// Stale resourceVersion: 409 with kube-apiserver's words.
	stale := created.DeepCopy()
	created.Labels = map[string]string{"a": "b"}
	if _, err := c.CoreV1().Pods("default").Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Labels = map[string]string{"a": "c"}
	_, err = c.CoreV1().Pods("default").Update(ctx, stale, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) || err.Error() != `Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again` {
		t.Fatalf("stale update: %v", err)
	}
	// Duplicate create: 409 AlreadyExists.
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod("web"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) ||
		err.Error() != `pods "web" already exists` {
		t.Fatalf("duplicate create: %v", err)
	}
	// The API stages of the create, in order, with the user.
	var got []stages.ID
	enginetest.WaitFor(t, 5*time.Second, "the create's API stages", func() bool {
		got = got[:0]
		for _, e := range env.Events() {
			if e.UID == string(created.UID) && e.Verb == "create" && e.Status == stages.Succeeded && e.User == "kubernetes-admin" {
				got = append(got, e.Stage)
			}
		}
		return strings.Join(ids(got), ",") == "authn,authz,admission,persist"
	})
}

func ids(s []stages.ID) []string {
	out := make([]string, len(s))
	for i, id := range s {
		out[i] = string(id)
	}
	return out
}

func TestForbiddenQuotaAndInvalidLeaveEtcdUnchanged(t *testing.T) {
	env := enginetest.Start(t)
	ctx := context.Background()
	admin := env.Admin()
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute", Namespace: "default"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}}}
	if _, err := admin.CoreV1().ResourceQuotas("default").Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := etcdRevision(t, env)

	bob := env.ClientFor(t, "bob")
	_, err := bob.CoreV1().Pods("default").Create(ctx, pod("x"), metav1.CreateOptions{})
	want := `pods is forbidden: User "bob" cannot create resource "pods" in API group "" in the namespace "default"`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("bob's create: %v\nwant %s", err, want)
	}

	big := pod("big")
	big.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	_, err = admin.CoreV1().Pods("default").Create(ctx, big, metav1.CreateOptions{})
	want = `pods "big" is forbidden: exceeded quota: compute, requested: requests.cpu=2, used: requests.cpu=0, limited: requests.cpu=1`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("quota: %v\nwant %s", err, want)
	}

	empty := pod("empty")
	empty.Spec.Containers = nil
	_, err = admin.CoreV1().Pods("default").Create(ctx, empty, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `Pod "empty" is invalid: spec.containers: Required value`) {
		t.Fatalf("missing containers: %v", err)
	}

	raw := admin.CoreV1().RESTClient().Post().Namespace("default").Resource("pods")
	res := raw.Body([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"`)).Do(ctx)
	if err := res.Error(); !apierrors.IsBadRequest(err) {
		t.Fatalf("malformed JSON: %v", err)
	}
	res = admin.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").
		Body([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":"nginx"}}`)).Do(ctx)
	if err := res.Error(); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `Pod in version "v1" cannot be handled as a Pod`) {
		t.Fatalf("wrong type: %v", err)
	}
	if after := etcdRevision(t, env); after != before {
		t.Fatalf("refused requests changed etcd: revision %d → %d", before, after)
	}
	// The refused create still shows in the pod's lane, as a failed authz.
	enginetest.WaitFor(t, 5*time.Second, "a failed authz event for bob's create", func() bool {
		for _, e := range env.Events() {
			if e.Pod == "x" && e.Stage == stages.Authz && e.Status == stages.Failed && e.User == "bob" {
				return true
			}
		}
		return false
	})
}

func etcdRevision(t *testing.T, env *enginetest.Env) int64 {
	t.Helper()
	resp, err := env.Etcd.Client.Get(context.Background(), "health")
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

func TestWatchAndInformer(t *testing.T) {
	env := enginetest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := env.Admin()
	w, err := c.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	factory := informers.NewSharedInformerFactory(env.ClientFor(t, "system:kube-scheduler"), 0)
	podInformer := factory.Core().V1().Pods().Informer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced) {
		t.Fatal("informer never synced")
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod("a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Pods("default").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var types []watch.EventType
	timeout := time.After(10 * time.Second)
	for len(types) < 2 {
		select {
		case ev := <-w.ResultChan():
			types = append(types, ev.Type)
		case <-timeout:
			t.Fatalf("watch saw %v", types)
		}
	}
	if types[0] != watch.Added || types[1] != watch.Deleted {
		t.Fatalf("watch events %v, want ADDED, DELETED", types)
	}
	enginetest.WaitFor(t, 5*time.Second, "informer to see the pod come and go", func() bool {
		_, exists, _ := podInformer.GetStore().GetByKey("default/a")
		return !exists && podInformer.LastSyncResourceVersion() != ""
	})
}

func TestRestartKeepsObjects(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	env := enginetest.Start(t, enginetest.Options{DataDir: dir})
	if _, err := env.Admin().CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "keep"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.Close()
	again := enginetest.Start(t, enginetest.Options{DataDir: dir})
	cm, err := again.Admin().CoreV1().ConfigMaps("default").Get(ctx, "keep", metav1.GetOptions{})
	if err != nil || cm.Data["k"] != "v" {
		t.Fatalf("after restart: %v %v", cm, err)
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

func TestQuotaUsageReturnsOnDeleteAndFailedWrite(t *testing.T) {
	env := enginetest.Start(t)
	ctx := context.Background()
	admin := env.Admin()
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: "default"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}}}
	if _, err := admin.CoreV1().ResourceQuotas("default").Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod("one"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A duplicate create is admitted, then refused by etcd: its charge must come back.
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod("one"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) &&
		!apierrors.IsForbidden(err) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := admin.CoreV1().Pods("default").Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod("two"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("after deleting the only pod the quota must allow another: %v", err)
	}
}
