package kubelet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/kubelet"
	"github.com/podtrace/podtrace/stages"
)

// publishRootCA creates kube-root-ca.crt in default, as kube-controller-manager's
// root-ca-cert-publisher does; the projected service account volume needs it.
func publishRootCA(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default"},
		Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"}}
	if _, err := c.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// startNode runs a kubelet for name against the real API server, as system:node:<name>.
func startNode(t *testing.T, env *enginetest.Env, name, cidr string) *kubelet.Kubelet {
	t.Helper()
	k, err := kubelet.New(kubelet.Config{
		Client:   env.ClientFor(t, "system:node:"+name, "system:nodes"),
		NodeName: name, Clock: env.Clock, Tracer: env.Tracer, PodCIDR: cidr, Seed: 7,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Start(env.Ctx); err != nil {
		t.Fatal(err)
	}
	return k
}

func createPod(t *testing.T, env *enginetest.Env, pod *v1.Pod) {
	t.Helper()
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	c := env.Admin()
	// No scheduler here: report the bind it would have, which the tracer
	// waits for before the kubelet stage.
	env.Tracer.Emit(stages.Event{Namespace: pod.Namespace, Pod: pod.Name, Stage: stages.Bind, Status: stages.Succeeded,
		Component: "default-scheduler", Node: pod.Spec.NodeName})
	if _, err := c.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
}

func getPod(c kubernetes.Interface, name string) *v1.Pod {
	p, err := c.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

func podReady(p *v1.Pod) bool {
	if p == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func kubeletStages(env *enginetest.Env, pod string, terminalOnly bool) []string {
	var out []string
	for _, e := range env.Events() {
		if e.Pod != pod || e.Component != kubelet.Component || (terminalOnly && !e.Status.Terminal()) {
			continue
		}
		s := string(e.Stage)
		if e.Container != "" {
			s += "/" + e.Container
		}
		out = append(out, s+":"+string(e.Status))
	}
	return out
}

func TestIntegrationPodLifecycle(t *testing.T) {
	env := enginetest.Start(t, enginetest.Options{Speed: 20})
	startNode(t, env, "node-1", "10.244.1.0/24")
	admin := env.Admin()
	publishRootCA(t, admin)
	ctx := context.Background()

	enginetest.WaitFor(t, 10*time.Second, "node-1 Ready with a lease", func() bool {
		n, err := admin.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		if err != nil {
			return false
		}
		_, lerr := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, "node-1", metav1.GetOptions{})
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue && c.Reason == "KubeletReady" && lerr == nil {
				return true
			}
		}
		return false
	})

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{NodeName: "node-1", TerminationGracePeriodSeconds: ptr.To(int64(30)),
			InitContainers: []v1.Container{{Name: "setup", Image: "busybox:1.36", Command: []string{"sh", "-c", "sleep 2"}}},
			Containers: []v1.Container{{
				Name: "nginx", Image: "nginx:1.27", Ports: []v1.ContainerPort{{ContainerPort: 80}},
				Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo started > /tmp/started"}}}},
				ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intOrString(80)}},
					InitialDelaySeconds: 3, PeriodSeconds: 5},
			}},
		},
	}
	createPod(t, env, pod)
	enginetest.WaitFor(t, 20*time.Second, "pod web Ready", func() bool { return podReady(getPod(admin, "web")) })

	got := strings.Join(kubeletStages(env, "web", true), " ")
	want := "kubelet:succeeded sandbox:succeeded cni:succeeded pull/setup:succeeded create/setup:succeeded start/setup:succeeded " +
		"pull/nginx:succeeded create/nginx:succeeded start/nginx:succeeded hooks/nginx:succeeded ready/nginx:succeeded " +
		"ready:succeeded" // the pod's Ready condition, seen as the kubelet writes it to the API
	if got != want {
		t.Fatalf("kubelet stages\n got %s\nwant %s", got, want)
	}
	p := getPod(admin, "web")
	if p.Status.PodIP == "" || p.Status.Phase != v1.PodRunning || p.Status.InitContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("status %+v", p.Status)
	}
	enginetest.WaitFor(t, 10*time.Second, "kubelet events in the API", func() bool {
		list, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		seen := map[string]bool{}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "web" && e.Source.Component == "kubelet" {
				seen[e.Reason] = true
			}
		}
		return seen["Pulling"] && seen["Pulled"] && seen["Created"] && seen["Started"]
	})

	// Delete: terminate, cleanup, then the kubelet removes the object.
	if err := admin.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, 20*time.Second, "pod web gone", func() bool {
		_, err := admin.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	stagesSeen := map[stages.ID]stages.Status{}
	for _, e := range env.Events() {
		if e.Pod == "web" && (e.Stage == stages.Terminate || e.Stage == stages.Cleanup || e.Stage == stages.Delete) {
			stagesSeen[e.Stage] = e.Status
		}
	}
	if stagesSeen[stages.Terminate] != stages.Succeeded || stagesSeen[stages.Cleanup] != stages.Succeeded {
		t.Fatalf("teardown stages %v", stagesSeen)
	}
}

func TestIntegrationCrashLoopAndNever(t *testing.T) {
	env := enginetest.Start(t, enginetest.Options{Speed: 200})
	startNode(t, env, "node-1", "10.244.1.0/24")
	admin := env.Admin()
	publishRootCA(t, admin)
	createPod(t, env, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crash"}, Spec: v1.PodSpec{NodeName: "node-1",
		Containers: []v1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"sh", "-c", "exit 1"}}}}})
	createPod(t, env, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "once"}, Spec: v1.PodSpec{NodeName: "node-1", RestartPolicy: v1.RestartPolicyNever,
		Containers: []v1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"sh", "-c", "exit 1"}}}}})

	// Each back-off is reported on the start stage; the status shows the
	// latest (writes coalesce, so not every one reaches the API).
	var backoffs []string
	enginetest.WaitFor(t, 20*time.Second, "three crash-loop back-offs", func() bool {
		backoffs = backoffs[:0]
		for _, e := range env.Events() {
			if e.Pod == "crash" && e.Stage == stages.Start && e.Reason == "CrashLoopBackOff" {
				backoffs = append(backoffs, strings.Fields(e.Message)[1])
			}
		}
		return len(backoffs) >= 3
	})
	if strings.Join(backoffs[:3], " ") != "10s 20s 40s" {
		t.Fatalf("back-offs %v", backoffs)
	}
	enginetest.WaitFor(t, 10*time.Second, "crash in CrashLoopBackOff", func() bool {
		p := getPod(admin, "crash")
		if p == nil || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		w := cs.State.Waiting
		return w != nil && w.Reason == "CrashLoopBackOff" && strings.Contains(w.Message, "restarting failed container=c pod=crash_default(") &&
			cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode == 1 && p.Status.Phase == v1.PodRunning
	})
	enginetest.WaitFor(t, 10*time.Second, "once Failed", func() bool {
		p := getPod(admin, "once")
		return p != nil && p.Status.Phase == v1.PodFailed
	})
}

func intOrString(port int32) intstr.IntOrString { return intstr.FromInt32(port) }

func lastMessage(env *enginetest.Env, pod string) string {
	msg := ""
	for _, e := range env.Events() {
		if e.Pod == pod && e.Message != "" {
			msg = string(e.Stage) + ": " + e.Message
		}
	}
	return msg
}
