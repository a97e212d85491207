package kubelet

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/stages"
)

// TestFaultsBreakAndRecover injects a fail fault at each node-side stage
// for one pod, checks the stage's realistic failure in stage events and pod
// status, removes the fault and checks that the pod recovers to Ready.
func TestFaultsBreakAndRecover(t *testing.T) {
	tests := []struct {
		stage   stages.ID
		variant string
		reason  string // stage event reason while broken
		message string // substring of its message
		waiting string // container waiting reason while broken, if any
	}{
		{stages.Kubelet, "", "FailedMount", `configmap "kube-root-ca.crt" not found`, ""},
		{stages.Kubelet, "node-not-ready", "NetworkNotReady", "network is not ready: container runtime network not ready", ""},
		{stages.Pull, "unauthorized", "ErrImagePull", "pull access denied", "ErrImagePull"},
		{stages.CNI, "plugin-error", "FailedCreatePodSandBox", `failed to set bridge addr`, ""},
		{stages.Sandbox, "", "FailedCreatePodSandBox", "Failed to create pod sandbox: rpc error", ""},
		{stages.CNI, "", "FailedCreatePodSandBox", "no IP addresses available in range set: 10.244.1.1-10.244.1.254", ""},
		{stages.Pull, "", "ErrImagePull", `docker.io/library/nginx:1.27: not found`, "ErrImagePull"},
		{stages.Create, "", "CreateContainerConfigError", `configmap "web-config" not found`, "CreateContainerConfigError"},
		{stages.Start, "", "RunContainerError", "executable file not found in $PATH", ""},
		{stages.Hooks, "", "FailedPostStartHook", "Exec lifecycle hook ([sh -c exit 1])", ""},
		{stages.Ready, "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.stage)+"/"+tt.variant, func(t *testing.T) {
			env := startKubelet(t, 100, nil)
			f := env.tracer.Faults.Add(stages.Fault{Stage: tt.stage, Kind: stages.Fail, Variant: tt.variant, Scope: stages.Scope{Pod: "default/p"}})
			env.create(t, newPod("p", v1.Container{Name: "web", Image: "nginx:1.27", Ports: []v1.ContainerPort{{ContainerPort: 80}}}))

			deadline := time.Now().Add(5 * time.Second)
			for tt.reason != "" {
				found := false
				for _, e := range env.events.forPod("p") {
					if e.Stage == tt.stage && e.Reason == tt.reason && strings.Contains(e.Message, tt.message) {
						found = true
					}
				}
				if found {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no %s event with %q; events: %s", tt.reason, tt.message, stageLine(env.events.forPod("p"), nil))
				}
				time.Sleep(5 * time.Millisecond)
			}
			if tt.waiting != "" {
				env.waitFor(t, "p", "waiting "+tt.waiting, func(p *v1.Pod) bool {
					return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
						p.Status.ContainerStatuses[0].State.Waiting.Reason == tt.waiting
				})
			}
			if tt.stage == stages.Ready {
				env.waitFor(t, "p", "running but not ready", func(p *v1.Pod) bool {
					return p.Status.Phase == v1.PodRunning && !isReady(p)
				})
				time.Sleep(50 * time.Millisecond) // 5 s of engine time: still not ready
				if p, _ := env.client.CoreV1().Pods("default").Get(context.Background(), "p", metav1.GetOptions{}); isReady(p) {
					t.Fatal("Ready despite the ready fault")
				}
			}
			env.tracer.Faults.Remove(f.ID)
			// Clear the clock's back-offs: fast-forward through pending waits.
			deadline = time.Now().Add(10 * time.Second)
			for {
				p, err := env.client.CoreV1().Pods("default").Get(context.Background(), "p", metav1.GetOptions{})
				if err == nil && isReady(p) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("did not recover after the fault was removed: %+v", p.Status)
				}
				env.clock.FastForward()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

func TestFailedMountRecovers(t *testing.T) {
	env := startKubelet(t, 100, nil)
	pod := newPod("cfg", v1.Container{Name: "app", Image: "nginx:1.27"})
	pod.Spec.Volumes = []v1.Volume{{Name: "settings", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "app-settings"}}}}}
	env.create(t, pod)
	want := `MountVolume.SetUp failed for volume "settings" : configmap "app-settings" not found`
	deadline := time.Now().Add(5 * time.Second)
	for {
		var msgs []string
		for _, e := range env.events.forPod("cfg") {
			if e.Stage == stages.Kubelet && e.Status == stages.Retrying {
				msgs = append(msgs, e.Message)
			}
		}
		if len(msgs) >= 3 {
			if msgs[0] != want {
				t.Fatalf("message %q, want %q", msgs[0], want)
			}
			break
		}
		if time.Now().After(deadline) {
			for _, e := range env.events.forPod("cfg") {
				t.Logf("%s %s %s next=%v", e.Time.Format("15:04:05.000"), e.Stage, e.Status, e.NextTry)
			}
			t.Logf("clock now %s pending %d", env.clock.Now().Format("15:04:05.000"), env.clock.Pending())
			t.Fatalf("FailedMount retries: %v", msgs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	p, _ := env.client.CoreV1().Pods("default").Get(context.Background(), "cfg", metav1.GetOptions{})
	if p.Status.Phase != v1.PodPending {
		t.Fatalf("phase %s", p.Status.Phase)
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-settings", Namespace: "default"}}
	if _, err := env.client.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.waitFor(t, "cfg", "Ready once the configMap exists", isReady)
}
