package engine_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/nodes"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/internal/testproc"
	"github.com/podtrace/podtrace/stages"
	"github.com/podtrace/podtrace/version"
)

// TestNodesRunTheRealKubelet checks what a user sees of the nodes: the
// real kubelet's version, and its API open to kube-apiserver only.
func TestNodesRunTheRealKubelet(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	e, _ := start(t, 1)
	var n *corev1.Node
	enginetest.WaitFor(t, 30*time.Second, "node-1 registered", func() bool {
		var err error
		n, err = e.AdminClient().CoreV1().Nodes().Get(context.Background(), "node-1", metav1.GetOptions{})
		return err == nil
	})
	if got := n.Status.NodeInfo.KubeletVersion; got != version.Kubernetes {
		t.Errorf("kubeletVersion = %q, want %q", got, version.Kubernetes)
	}
	// kubectl get nodes -o wide: the simulated runtime and its version, on
	// this machine's kernel and operating system.
	info := n.Status.NodeInfo
	if rt := info.ContainerRuntimeVersion; !regexp.MustCompile(`^podtrace-sim://\d+\.\d+\.\d+`).MatchString(rt) {
		t.Errorf("containerRuntimeVersion = %q, want podtrace-sim://<podtrace's semantic version>", rt)
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	if want := unix.ByteSliceToString(uts.Release[:]); info.KernelVersion != want {
		t.Errorf("kernelVersion = %q, want this machine's %q", info.KernelVersion, want)
	}
	if info.OSImage == "" || strings.Contains(info.OSImage, "wheezy") {
		t.Errorf("osImage = %q, want this machine's", info.OSImage)
	}
	// kubectl describe node: the range the node's pods get their addresses
	// from (in the pod network namespace; loopback twins have none).
	if want := []string{nodes.PodCIDR(0)}; podnet.Inside() && (n.Spec.PodCIDR != want[0] || !slices.Equal(n.Spec.PodCIDRs, want)) {
		t.Errorf("podCIDR %q, podCIDRs %q; want %q", n.Spec.PodCIDR, n.Spec.PodCIDRs, want)
	}
	// The kubelet's API answers kube-apiserver (its client certificate,
	// authorized by a SubjectAccessReview) and no one else.
	ctx := context.Background()
	if _, err := e.AdminClient().CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/node-1/proxy/pods").DoRaw(ctx); err != nil {
		t.Errorf("kube-apiserver's proxy to the kubelet: %v", err)
	}
	// The node advertises where its kubelet listens, and kube-apiserver's
	// proxy reaches it there by name. (10250 is the first kubelet's of a
	// process on its node IP: e2e/kubectl checks it on podtrace serve.)
	kubelet := e.NodeSet.Nodes()[0]
	port := kubelet.Port
	if p := n.Status.DaemonEndpoints.KubeletEndpoint.Port; int(p) != port {
		t.Errorf("the node advertises its kubelet on port %d, it listens on %d", p, port)
	}
	if _, err := e.AdminClient().CoreV1().RESTClient().Get().AbsPath(fmt.Sprintf("/api/v1/nodes/node-1:%d/proxy/pods", port)).DoRaw(ctx); err != nil {
		t.Errorf("kube-apiserver's proxy to node-1:%d: %v", port, err)
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := insecure.Get(fmt.Sprintf("https://%s/pods", net.JoinHostPort(kubelet.Address, strconv.Itoa(kubelet.Port))))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an anonymous caller of the kubelet's API got %s, want 401", resp.Status)
	}
}

// TestKubeletFaults injects each node-stage fault at the CRI seam
// and checks the real kubelet's reaction: its Event (reason and words),
// and the stage's failure in the pod's lane.
func TestKubeletFaults(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	e, rec := start(t, 1)
	ctx := context.Background()
	exec := func(cmd ...string) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}
	}
	cases := []struct {
		stage            stages.ID
		variant          string
		edit             func(*corev1.Container)
		reason, contains string
		laneReason       string
	}{
		{stage: stages.Sandbox, reason: "FailedCreatePodSandBox", contains: "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to create containerd task", laneReason: "FailedCreatePodSandBox"},
		{stage: stages.Pull, variant: "not-found", reason: "Failed", contains: `failed to pull and unpack image "docker.io/library/nginx:1.27"`, laneReason: "ErrImagePull"},
		{stage: stages.Create, reason: "Failed", contains: "failed to create containerd container", laneReason: "CreateContainerError"},
		{stage: stages.Start, reason: "Failed", contains: "executable file not found in $PATH", laneReason: "RunContainerError"},
		{stage: stages.Hooks, edit: func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PostStart: exec("sh", "-c", "echo started")}
		},
			reason: "FailedPostStartHook", contains: "PostStartHook failed", laneReason: "FailedPostStartHook"},
		{stage: stages.Ready, edit: func(c *corev1.Container) {
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}, PeriodSeconds: 1}
		}, reason: "Unhealthy", contains: "Readiness probe failed", laneReason: "Unhealthy"},
	}
	for _, c := range cases {
		t.Run(string(c.stage), func(t *testing.T) {
			name := "fault-" + string(c.stage)
			e.Tracer.Faults.Add(stages.Fault{Stage: c.stage, Kind: stages.Fail, Variant: c.variant, Scope: stages.Scope{Pod: "default/" + name}})
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}
			if c.edit != nil {
				c.edit(&pod.Spec.Containers[0])
			}
			if _, err := e.AdminClient().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var got []string
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("events of %s: %q", name, got)
				}
			})
			enginetest.WaitFor(t, 30*time.Second, "the kubelet's "+c.reason+" event", func() bool {
				evs, err := e.AdminClient().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
				if err != nil {
					return false
				}
				got = got[:0]
				for _, ev := range evs.Items {
					got = append(got, ev.Reason+": "+ev.Message)
					if ev.Reason == c.reason && strings.Contains(ev.Message, c.contains) && ev.Source.Component == "kubelet" {
						return true
					}
				}
				return false
			})
			lane := false
			for _, ev := range rec.Events() {
				if ev.Pod == name && ev.Stage == c.stage && ev.Status == stages.Retrying && ev.Reason == c.laneReason {
					lane = true
				}
			}
			if !lane {
				t.Errorf("no %s %s in the lane", c.stage, c.laneReason)
			}
		})
	}
}

// TestKubeletPods runs pods that exercise the real kubelet on the
// simulated runtime, one node for all of them.
func TestKubeletPods(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	e, rec := start(t, 1)
	ctx := context.Background()
	pods := e.AdminClient().CoreV1().Pods("default")
	create := func(t *testing.T, p *corev1.Pod) {
		t.Helper()
		p.Namespace = "default"
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) *corev1.Pod {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return &corev1.Pod{}
		}
		return p
	}
	event := func(name, reason, contains string) func() bool {
		return func() bool {
			evs, err := e.AdminClient().CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
			if err != nil {
				return false
			}
			for _, ev := range evs.Items {
				if ev.Reason == reason && strings.Contains(ev.Message, contains) {
					return true
				}
			}
			return false
		}
	}
	lane := func(name string, stage stages.ID, status stages.Status) []stages.Event {
		var out []stages.Event
		for _, ev := range rec.Events() {
			if ev.Pod == name && ev.Stage == stage && (status == "" || ev.Status == status) {
				out = append(out, ev)
			}
		}
		return out
	}

	t.Run("crash loop", func(t *testing.T) {
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "crash"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "worker", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo boom; exit 1"}}}}})
		// Every status the pod has, from a watch: since 1.33 the kubelet
		// requeues a crash-looping pod at its back-off's expiry, so the
		// status reads CrashLoopBackOff only until the restart shows, which
		// a poll may miss.
		var st corev1.ContainerStatus
		watchCtx, stop := context.WithTimeout(ctx, 2*time.Minute)
		defer stop()
		lw := cache.NewListWatchFromClient(e.AdminClient().CoreV1().RESTClient(), "pods", "default", fields.OneTermEqualSelector("metadata.name", "crash"))
		_, err := watchtools.UntilWithSync(watchCtx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || len(p.Status.ContainerStatuses) == 0 {
				return false, nil
			}
			st = p.Status.ContainerStatuses[0]
			return st.State.Waiting != nil && st.State.Waiting.Reason == "CrashLoopBackOff" && st.RestartCount >= 1, nil
		})
		if err != nil {
			t.Fatalf("no CrashLoopBackOff within 2 minutes (last status %+v): %v", st, err)
		}
		if !regexp.MustCompile(`^back-off \d+s restarting failed container=worker pod=crash_default`).MatchString(st.State.Waiting.Message) {
			t.Errorf("waiting message %q, want upstream's back-off text", st.State.Waiting.Message)
		}
		if st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.ExitCode != 1 {
			t.Errorf("last state %+v, want terminated with exit code 1", st.LastTerminationState)
		}
		enginetest.WaitFor(t, 10*time.Second, "the BackOff event", event("crash", "BackOff", "Back-off restarting failed container worker"))
		// The lane's attempts and kubectl's RESTARTS agree once the kubelet
		// has written the status of its latest restart.
		attempts, restarts := 0, int32(0)
		enginetest.WaitFor(t, 30*time.Second, "RESTARTS to match the lane's attempts", func() bool {
			attempts = 0
			for _, ev := range lane("crash", stages.Start, stages.Started) {
				attempts = max(attempts, ev.Attempt)
			}
			if p := get("crash"); len(p.Status.ContainerStatuses) > 0 {
				restarts = p.Status.ContainerStatuses[0].RestartCount
			}
			return int32(attempts-1) == restarts
		})
		if len(lane("crash", stages.Start, stages.Retrying)) == 0 {
			t.Error("no start retry (CrashLoopBackOff) in the lane")
		}
	})

	t.Run("hostPath volume", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "not-made")
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hostpath"}, Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: dir, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}},
			Containers: []corev1.Container{{Name: "agent", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/var/log"}}}}}})
		enginetest.WaitFor(t, 30*time.Second, "the pod Ready", func() bool { return isReady(get("hostpath")) })
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the simulated node made its hostPath %s on this machine (%v)", dir, err)
		}
	})

	t.Run("in-place resize", func(t *testing.T) {
		res := func(cpuReq, cpuLim string) corev1.ResourceRequirements {
			return corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLim), corev1.ResourceMemory: resource.MustParse("128Mi")}}
		}
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "resized"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "nginx:1.27", Resources: res("100m", "200m")}}}})
		enginetest.WaitFor(t, 30*time.Second, "the pod Ready", func() bool { return isReady(get("resized")) })
		patch := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"300m"}}}]}}`
		if _, err := pods.Patch(ctx, "resized", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "resize"); err != nil {
			t.Fatal(err)
		}
		want := res("150m", "300m")
		var got *corev1.ResourceRequirements
		enginetest.WaitFor(t, 30*time.Second, "the resize in the container's status", func() bool {
			p := get("resized")
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
					return false
				}
			}
			if len(p.Status.ContainerStatuses) == 1 {
				got = p.Status.ContainerStatuses[0].Resources
			}
			return got != nil && got.Requests.Cpu().Equal(*want.Requests.Cpu()) && got.Limits.Cpu().Equal(*want.Limits.Cpu())
		})
		if p := get("resized"); !isReady(p) || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("after the resize: ready %v, restarts %d; want ready, not restarted", isReady(p), p.Status.ContainerStatuses[0].RestartCount)
		}
	})

	t.Run("init, postStart, httpGet readiness", func(t *testing.T) {
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ordered"}, Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo init done"}}},
			Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo hello"}}}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
					PeriodSeconds: 1}}}}})
		// The recording reads the hub on a goroutine of its own: the ready
		// stage's end may reach it a moment after the pod reads Ready.
		enginetest.WaitFor(t, 30*time.Second, "the pod Ready, and its ready stage recorded", func() bool {
			return isReady(get("ordered")) && len(lane("ordered", stages.Ready, stages.Succeeded)) > 0
		})
		var order []string
		for _, ev := range rec.Events() {
			if ev.Pod == "ordered" && ev.Status == stages.Succeeded && (ev.Stage == stages.Start || ev.Stage == stages.Hooks || ev.Stage == stages.Ready) {
				order = append(order, string(ev.Stage)+":"+ev.Container)
			}
		}
		want := []string{"start:init", "start:web", "hooks:web", "ready:"}
		if strings.Join(order, " ") != strings.Join(want, " ") {
			t.Errorf("order %v, want %v", order, want)
		}
		ip := get("ordered").Status.PodIP
		if !podnet.Inside() {
			if !strings.HasPrefix(ip, "127.244.") { // a loopback address mirroring the pod CIDR
				t.Errorf("pod IP %q, want 127.244.*", ip)
			}
			return
		}
		// The pod IP itself, in the pod network namespace, from its node's
		// range.
		n, err := e.AdminClient().CoreV1().Nodes().Get(ctx, get("ordered").Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, cidr, err := net.ParseCIDR(n.Spec.PodCIDR); err != nil || !cidr.Contains(net.ParseIP(ip)) {
			t.Errorf("pod IP %q is not in its node's podCIDR %q", ip, n.Spec.PodCIDR)
		}
	})

	t.Run("gRPC probes", func(t *testing.T) {
		// The kubelet's gRPC probe calls the standard health service on
		// the pod's address, as against agnhost's grpc-health-checking.
		probe := func() *corev1.Probe {
			return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 5000}},
				PeriodSeconds: 1, FailureThreshold: 1}
		}
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "grpc"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "nginx:1.27", ReadinessProbe: probe(), LivenessProbe: probe()}}}})
		enginetest.WaitFor(t, 30*time.Second, "the pod Ready", func() bool { return isReady(get("grpc")) })
		time.Sleep(3 * time.Second) // three more liveness probes
		if p := get("grpc"); !isReady(p) || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("after 3s: Ready %v, %d restarts; want Ready, none", isReady(p), p.Status.ContainerStatuses[0].RestartCount)
		}
		if event("grpc", "Unhealthy", "")() {
			t.Error("an Unhealthy event for the gRPC probes")
		}
		// A sidecar's declared port answers too, though the kubelet's
		// sandbox port mappings carry only the app containers' ports.
		always := corev1.ContainerRestartPolicyAlways
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "grpc-sidecar"}, Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "health", Image: "nginx:1.27", RestartPolicy: &always,
				Ports: []corev1.ContainerPort{{ContainerPort: 5000}}, ReadinessProbe: probe()}},
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}})
		enginetest.WaitFor(t, 30*time.Second, "the sidecar's pod Ready", func() bool { return isReady(get("grpc-sidecar")) })
	})

	t.Run("a probe of a port the container does not declare", func(t *testing.T) {
		// The container declares 80: its program answers there only, and a
		// readiness probe of 81 is refused, as the conformance suite's
		// "wrong probe port" specs expect.
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wrongport"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(81)}},
				PeriodSeconds: 1}}}}})
		enginetest.WaitFor(t, 30*time.Second, "Unhealthy: connection refused", event("wrongport", "Unhealthy", "connect: connection refused"))
		if isReady(get("wrongport")) {
			t.Error("the pod is Ready")
		}
	})

	t.Run("readiness fault", func(t *testing.T) {
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probed"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: "nginx:1.27", ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8081)}}, PeriodSeconds: 1}}}}})
		enginetest.WaitFor(t, 30*time.Second, "the pod Ready", func() bool { return isReady(get("probed")) })
		f := e.Tracer.Faults.Add(stages.Fault{Stage: stages.Ready, Kind: stages.Fail, Scope: stages.Scope{Pod: "default/probed"}})
		enginetest.WaitFor(t, 30*time.Second, "the pod NotReady", func() bool { return !isReady(get("probed")) })
		enginetest.WaitFor(t, 10*time.Second, "Unhealthy", event("probed", "Unhealthy", "Readiness probe failed"))
		if len(lane("probed", stages.Ready, stages.Retrying)) == 0 {
			t.Error("the lane's ready stage did not fall back")
		}
		e.Tracer.Faults.Remove(f.ID)
		enginetest.WaitFor(t, 30*time.Second, "the pod Ready again", func() bool { return isReady(get("probed")) })
	})

	t.Run("missing configMap", func(t *testing.T) {
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nocm"}, Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "nothere"}}}}},
			Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}}}}})
		enginetest.WaitFor(t, 30*time.Second, "FailedMount", event("nocm", "FailedMount", `MountVolume.SetUp failed for volume "cfg" : configmap "nothere" not found`))
		if len(lane("nocm", stages.Kubelet, stages.Retrying)) == 0 {
			t.Error("no kubelet retry (FailedMount) in the lane")
		}
	})

	t.Run("invalid image name", func(t *testing.T) {
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "badref"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "NGINX:1.27"}}}})
		enginetest.WaitFor(t, 30*time.Second, "InvalidImageName", event("badref", "InspectFailed", "invalid reference format"))
		enginetest.WaitFor(t, 10*time.Second, "the lane's pull failure", func() bool {
			return len(lane("badref", stages.Pull, stages.Failed)) > 0
		})
	})

	t.Run("logs through the kubelet", func(t *testing.T) {
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "talker"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "talk", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo hello from talker; sleep 3600"}}}}})
		enginetest.WaitFor(t, 30*time.Second, "the pod Ready", func() bool { return isReady(get("talker")) })
		var out string
		enginetest.WaitFor(t, 10*time.Second, "the log line", func() bool {
			b, err := pods.GetLogs("talker", &corev1.PodLogOptions{}).DoRaw(ctx)
			out = string(b)
			return err == nil && strings.Contains(out, "hello from talker")
		})
	})

	t.Run("what a container runs", func(t *testing.T) {
		// A ConfigMap as a volume and as environment, an emptyDir two
		// containers share, and a termination message: what the container
		// prints and how it ends come from what the kubelet gave it.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "debug", "greeting": "hello"}}
		if _, err := e.AdminClient().CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		shared := []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
				{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			InitContainers: []corev1.Container{{Name: "prepare", Image: "busybox:1.36", VolumeMounts: shared,
				Command: []string{"sh", "-c", "echo prepared by $HOSTNAME > /shared/note"}}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36",
				Env: []corev1.EnvVar{{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "greeting"}}}},
				VolumeMounts: append(shared, corev1.VolumeMount{Name: "cfg", MountPath: "/etc/config"}),
				Command:      []string{"sh", "-c", `echo "$GREETING, mode $(cat /etc/config/mode)"; cat /shared/note; ls /etc/config; echo bye > /dev/termination-log; exit 3`}}}}})
		var term *corev1.ContainerStateTerminated
		enginetest.WaitFor(t, 30*time.Second, "the container terminated", func() bool {
			for _, st := range get("reader").Status.ContainerStatuses {
				term = st.State.Terminated
			}
			return term != nil
		})
		if term.ExitCode != 3 || term.Reason != "Error" || term.Message != "bye\n" {
			t.Errorf("terminated: exit %d, %s, message %q; want 3, Error, \"bye\\n\"", term.ExitCode, term.Reason, term.Message)
		}
		b, err := pods.GetLogs("reader", &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
		if want := "hello, mode debug\nprepared by reader\ngreeting\nmode\n"; err != nil || string(b) != want {
			t.Errorf("kubectl logs reader: %q, %v; want %q", b, err, want)
		}
		// The user it runs as, and a message taken from its log, whose last
		// line has no newline.
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "runas"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1001), RunAsGroup: ptr.To[int64](2002)},
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				Command: []string{"sh", "-c", "id; echo -n DONE; exit 1"}}}}})
		term = nil
		enginetest.WaitFor(t, 30*time.Second, "the container terminated", func() bool {
			for _, st := range get("runas").Status.ContainerStatuses {
				term = st.State.Terminated
			}
			return term != nil
		})
		if want := "uid=1001 gid=2002 groups=2002\nDONE"; term.Message != want {
			t.Errorf("termination message from the log %q, want %q", term.Message, want)
		}
	})

	t.Run("cni fault", func(t *testing.T) {
		e.Tracer.Faults.Add(stages.Fault{Stage: stages.CNI, Kind: stages.Fail, Scope: stages.Scope{Pod: "default/nonet"}})
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nonet"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}})
		enginetest.WaitFor(t, 30*time.Second, "FailedCreatePodSandBox", event("nonet", "FailedCreatePodSandBox",
			`failed to setup network for sandbox`))
		if evs := lane("nonet", stages.CNI, stages.Retrying); len(evs) == 0 || !strings.Contains(evs[0].Message, "no IP addresses available in range set: 10.244.1.1-10.244.1.254") {
			t.Errorf("cni lane events %v, want host-local's exhaustion error", evs)
		}
	})

	t.Run("volumes", func(t *testing.T) { kubeletVolumes(t, pods, create, get) })

	t.Run("the node's summary", func(t *testing.T) { kubeletSummary(t, e, create, get, event) })
}
