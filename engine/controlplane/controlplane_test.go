package controlplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/controlplane"
	"github.com/podtrace/podtrace/engine/pki"
	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/version"
)

// One control plane for the package: starting kube-apiserver costs seconds.
var (
	cp  *controlplane.ControlPlane
	rec *trace.Recording
	tr  *trace.Tracer
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "podtrace-cp-")
	if err != nil {
		panic(err)
	}
	hub := trace.NewHub()
	rec = hub.Record()
	tr = trace.New(clock.RealClock{}, hub)
	ctx, cancel := context.WithCancel(context.Background())
	cp, err = controlplane.Start(ctx, controlplane.Config{DataDir: dir, UnsafeNoFsync: true, Tracer: tr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		os.Exit(1)
	}
	code := m.Run()
	cancel()
	cp.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// poll is how often a test asks again for what it waits for.
const poll = 50 * time.Millisecond

func admin(t *testing.T) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(cp.AdminConfig())
}

func TestSecondStartOnSameDataDirFailsAtOnce(t *testing.T) {
	start := time.Now()
	_, err := controlplane.Start(context.Background(), controlplane.Config{DataDir: cp.DataDir})
	if err == nil || !strings.Contains(err.Error(), "is in use by another podtrace") {
		t.Fatalf("second start on %s: got %v, want an in-use error", cp.DataDir, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("second start took %s to fail", d)
	}
}

func TestViewerContextIsReadOnly(t *testing.T) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: cp.Kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: pki.ViewerContext}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	viewer := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	// RBAC reads bindings from an informer: the viewer's is a moment old.
	waittest.EventuallyEvery(t, "the viewer to list pods", poll, 30*time.Second, func() (bool, string) {
		_, err := viewer.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
	_, err = viewer.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	want := `configmaps is forbidden: User "viewer" cannot create resource "configmaps" in API group "" in the namespace "default"`
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("viewer create: got %v, want 403 %q", err, want)
	}
}

// node registers a Ready node with room for pods, as a kubelet would.
func node(t *testing.T, name string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	n, err := admin(t).CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err != nil {
		return
	}
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	// The node lifecycle controller writes new nodes too (its taints): retry
	// on its conflicts as a kubelet does.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := admin(t).CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status = corev1.NodeStatus{Capacity: rl, Allocatable: rl,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}}
		_, err = admin(t).CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDeploymentStagesThroughUpstream(t *testing.T) {
	node(t, "node-1")
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}}}}
	if _, err := admin(t).AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	waittest.EventuallyEvery(t, "2 pods bound to node-1", poll, 2*time.Minute, func() (bool, string) {
		l, err := admin(t).CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		pods = l.Items
		n := 0
		for _, p := range pods {
			if p.Spec.NodeName == "node-1" {
				n++
			}
		}
		return n == 2, fmt.Sprintf("%d of %d pods bound", n, len(pods))
	})
	want := []stages.ID{stages.Authn, stages.Authz, stages.Admission, stages.Persist, stages.Reconcile, stages.Schedule, stages.Bind}
	for _, p := range pods {
		waittest.EventuallyEvery(t, "bind succeeded event of "+p.Name, poll, 30*time.Second, func() (bool, string) {
			for _, e := range rec.Events() {
				if e.Pod == p.Name && e.Stage == stages.Bind && e.Status == stages.Succeeded {
					return true, ""
				}
			}
			return false, ""
		})
		seen := map[stages.ID]stages.Event{}
		for _, e := range rec.Events() {
			if e.Pod == p.Name && e.Kind == stages.KindPod && e.Status == stages.Succeeded {
				seen[e.Stage] = e
			}
		}
		for _, s := range want {
			if _, ok := seen[s]; !ok {
				t.Errorf("pod %s: no succeeded %s event (have %v)", p.Name, s, seen)
			}
		}
		if r := seen[stages.Reconcile]; r.Component != "replicaset-controller" || r.Reason != "SuccessfulCreate" {
			t.Errorf("pod %s reconcile: component %q reason %q, want replicaset-controller SuccessfulCreate", p.Name, r.Component, r.Reason)
		}
		if a := seen[stages.Authn]; a.User != "system:serviceaccount:kube-system:replicaset-controller" {
			t.Errorf("pod %s created by %q, want the replicaset-controller service account", p.Name, a.User)
		}
		if b := seen[stages.Bind]; b.Message != fmt.Sprintf("Successfully assigned default/%s to node-1", p.Name) {
			t.Errorf("pod %s bind message %q", p.Name, b.Message)
		}
	}
}

// The embedded etcd's client port speaks only mutual TLS: a client that
// trusts the CA but has no certificate of the cluster's is refused.
func TestEmbeddedEtcdDemandsClientCertificates(t *testing.T) {
	ca, err := os.ReadFile(cp.PKI.Path(pki.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	c, err := clientv3.New(clientv3.Config{Endpoints: cp.Etcd.Endpoints, DialTimeout: 2 * time.Second,
		TLS: &tls.Config{RootCAs: pool}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, "/registry/secrets", clientv3.WithPrefix()); err == nil {
		t.Fatal("read /registry/secrets from the embedded etcd without a client certificate")
	}
	if !strings.HasPrefix(cp.Etcd.Endpoints[0], "https://127.0.0.1:") {
		t.Errorf("etcd endpoint %s, want https on loopback", cp.Etcd.Endpoints[0])
	}
}

// /version names the pinned release, as kubectl version shows it.
func TestVersionIsThePinnedRelease(t *testing.T) {
	v, err := admin(t).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != version.Kubernetes || v.Major != "1" || v.Minor != "36" {
		t.Errorf("/version = %s %s.%s, want %s", v.GitVersion, v.Major, v.Minor, version.Kubernetes)
	}
}
