package kubelet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/controllers/deployment"
	"github.com/podtrace/podtrace/engine/controllers/garbagecollector"
	"github.com/podtrace/podtrace/engine/controllers/replicaset"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/scheduler"
	"github.com/podtrace/podtrace/stages"
)

var saGroups = []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}

// TestIntegrationDeploymentOnThreeNodes is issue 3's first acceptance
// check: a 3-replica Deployment on 3 nodes, each pod's stream has every
// stage from authn to ready in order, and deleting the Deployment takes
// every pod through terminate, cleanup and delete.
func TestIntegrationDeploymentOnThreeNodes(t *testing.T) {
	env := enginetest.Start(t, enginetest.Options{Speed: 20})
	admin := env.Admin()
	publishRootCA(t, admin)
	for i := 1; i <= 3; i++ {
		startNode(t, env, fmt.Sprintf("node-%d", i), fmt.Sprintf("10.244.%d.0/24", i))
	}
	sched, err := scheduler.New(scheduler.Config{Client: env.ClientFor(t, scheduler.User), Clock: env.Clock, Tracer: env.Tracer, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := replicaset.New(replicaset.Config{Client: env.ClientFor(t, replicaset.DefaultUser, saGroups...), Clock: env.Clock, Tracer: env.Tracer})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := deployment.New(deployment.Config{Client: env.ClientFor(t, deployment.DefaultUser, saGroups...), Clock: env.Clock, Tracer: env.Tracer})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := garbagecollector.New(garbagecollector.Config{Client: env.ClientFor(t, "system:serviceaccount:kube-system:generic-garbage-collector", saGroups...), Clock: env.Clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []interface{ Start(context.Context) error }{sched, rs, dc, gc} {
		if err := s.Start(env.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	enginetest.WaitFor(t, 20*time.Second, "3 Ready nodes", func() bool {
		nodes, err := admin.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		return err == nil && len(nodes.Items) == 3
	})

	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{
					Containers: []v1.Container{{Name: "nginx", Image: "nginx:1.27", Ports: []v1.ContainerPort{{ContainerPort: 80}},
						Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: mustQty("3")}}}},
				},
			},
		},
	}
	if _, err := admin.AppsV1().Deployments("default").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []v1.Pod
	enginetest.WaitFor(t, 30*time.Second, "3 Ready pods", func() bool {
		list, err := admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(list.Items) != 3 {
			return false
		}
		for i := range list.Items {
			if !podReady(&list.Items[i]) {
				return false
			}
		}
		pods = list.Items
		return true
	})

	nodesUsed := map[string]bool{}
	for _, p := range pods {
		nodesUsed[p.Spec.NodeName] = true
		// First terminal event of each stage, in emit order.
		var order []string
		seen := map[stages.ID]bool{}
		for _, e := range env.Events() {
			if e.Pod != p.Name || e.Kind != stages.KindPod || !e.Status.Terminal() || seen[e.Stage] {
				continue
			}
			if e.Status != stages.Succeeded {
				t.Errorf("pod %s: %s %s %s: %s", p.Name, e.Stage, e.Status, e.Reason, e.Message)
			}
			seen[e.Stage] = true
			order = append(order, string(e.Stage))
		}
		// The API stages are reported when each request finishes, so they
		// may interleave with the scheduler's.
		for _, s := range stages.Lifecycle {
			if !seen[s] {
				t.Errorf("pod %s: no %s event", p.Name, s)
			}
		}
		// The kubelet may start before the scheduler's bind call has
		// returned (it sees the binding through its watch), so only the
		// node-side order is checked here.
		var node []string
		for _, s := range order {
			if stages.ID(s).Index() >= stages.Kubelet.Index() {
				node = append(node, s)
			}
		}
		if got, want := strings.Join(node, " "), "kubelet sandbox cni pull create start hooks ready"; got != want {
			t.Errorf("pod %s node stages %q, want %q", p.Name, got, want)
		}
	}
	if len(nodesUsed) != 3 {
		t.Errorf("pods on %d nodes, want 3 (3 cpu each on 4-cpu nodes)", len(nodesUsed))
	}

	if err := admin.AppsV1().Deployments("default").Delete(context.Background(), "web", metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(40 * time.Second)
	for {
		list, err := admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
		if err == nil && len(list.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, p := range list.Items {
				t.Logf("left: %s deletion=%v owners=%v last=%s", p.Name, p.DeletionTimestamp, p.OwnerReferences, lastMessage(env, p.Name))
			}
			evs, _ := admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
			for _, e := range evs.Items {
				if e.Type == v1.EventTypeWarning {
					t.Logf("event %s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
				}
			}
			t.Fatal("pods not deleted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range pods {
		done := map[stages.ID]bool{}
		for _, e := range env.Events() {
			if e.Pod == p.Name && e.Status == stages.Succeeded {
				done[e.Stage] = true
			}
		}
		for _, s := range stages.Teardown {
			if !done[s] {
				t.Errorf("pod %s: no succeeded %s event", p.Name, s)
			}
		}
	}
}

func mustQty(s string) resource.Quantity { return resource.MustParse(s) }
