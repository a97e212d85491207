package containerd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/images"
	"github.com/podtrace/podtrace/stages"
)

// kubeletRequests reads back, from node's containerd, the sandbox and
// container configurations the kubelet sent for the pod with uid, as
// `crictl inspectp` and `crictl inspect` show them (the CRI plugin keeps
// each request and returns it in its verbose status).
func kubeletRequests(rt internalapi.RuntimeService, uid string) (*runtimeapi.PodSandboxConfig, *runtimeapi.ContainerConfig, error) {
	ctx := context.Background()
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}})
	if err != nil || len(sbs) != 1 {
		return nil, nil, fmt.Errorf("the sandbox of pod %s: %d found, %v", uid, len(sbs), err)
	}
	sb, err := rt.PodSandboxStatus(ctx, sbs[0].Id, true)
	if err != nil {
		return nil, nil, err
	}
	sbConfig, err := keptRequest[runtimeapi.PodSandboxConfig](sb.GetInfo())
	if err != nil {
		return nil, nil, fmt.Errorf("the sandbox configuration of pod %s: %w", uid, err)
	}
	cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sbs[0].Id})
	if err != nil || len(cs) != 1 {
		return nil, nil, fmt.Errorf("the container of pod %s: %d found, %v", uid, len(cs), err)
	}
	c, err := rt.ContainerStatus(ctx, cs[0].Id, true)
	if err != nil {
		return nil, nil, err
	}
	cConfig, err := keptRequest[runtimeapi.ContainerConfig](c.GetInfo())
	if err != nil {
		return nil, nil, fmt.Errorf("the container configuration of pod %s: %w", uid, err)
	}
	return sbConfig, cConfig, nil
}

// keptRequest decodes the request the CRI plugin kept, from a verbose
// status's info.
func keptRequest[T any](info map[string]string) (*T, error) {
	var kept struct{ Config *T }
	if err := json.Unmarshal([]byte(info["info"]), &kept); err != nil {
		return nil, err
	}
	if kept.Config == nil {
		return nil, errors.New("not in the verbose status")
	}
	return kept.Config, nil
}

// copyMounts copies each file cc mounts into dir, makes an empty directory
// there for each directory it mounts, and points its mounts at them, so
// that cc can run after its pod is gone.
func copyMounts(cc *runtimeapi.ContainerConfig, dir string) error {
	for i, m := range cc.Mounts {
		to := filepath.Join(dir, strconv.Itoa(i))
		fi, err := os.Stat(m.HostPath)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			err = os.MkdirAll(to, 0o755)
		} else if err = os.MkdirAll(dir, 0o755); err == nil {
			var data []byte
			if data, err = os.ReadFile(m.HostPath); err == nil {
				err = os.WriteFile(to, data, fi.Mode())
			}
		}
		if err != nil {
			return err
		}
		m.HostPath = to
	}
	return nil
}

// criDirect runs a pod's sandbox, then creates and starts its container,
// straight at a containerd's CRI as crictl runp/create/start does, with
// the configurations the kubelet sent for another pod (renamed), and
// returns how long that took and a func that removes the pod.
func criDirect(rt internalapi.RuntimeService, sb *runtimeapi.PodSandboxConfig, cc *runtimeapi.ContainerConfig, logDir string, i int) (time.Duration, func(), error) {
	ctx := context.Background()
	name := fmt.Sprintf("direct-%d", i)
	sb.Metadata = &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "bench", Uid: name}
	sb.Hostname, sb.LogDirectory = name, filepath.Join(logDir, name)
	start := time.Now()
	id, err := rt.RunPodSandbox(ctx, sb, "")
	undo := func() {
		if id != "" {
			_ = rt.StopPodSandbox(ctx, id)
			_ = rt.RemovePodSandbox(ctx, id)
		}
	}
	if err != nil {
		return 0, undo, err
	}
	cid, err := rt.CreateContainer(ctx, id, cc, sb)
	if err != nil {
		return 0, undo, err
	}
	if err := rt.StartContainer(ctx, cid); err != nil {
		return 0, undo, err
	}
	return time.Since(start), undo, nil
}

// throughKubelet creates a pod of the (present) demo image through the API
// and returns the time until the API reports it Ready, its UID, and a func
// that deletes it and waits until it is gone.
func (c *realCluster) throughKubelet(i int) (time.Duration, string, func(), error) {
	ctx := context.Background()
	name := fmt.Sprintf("bench-%d", i)
	pods := c.AdminClient().CoreV1().Pods("default")
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return 0, "", func() {}, err
	}
	defer w.Stop()
	// No service account token: the direct path mounts no volume either.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To(int64(2)), AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{Name: "demo", Image: images.Demo, ImagePullPolicy: corev1.PullIfNotPresent}}}}
	undo := func() {
		_ = pods.Delete(ctx, name, metav1.DeleteOptions{})
		for j := 0; j < 400; j++ {
			if _, err := pods.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	start := time.Now()
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return 0, "", undo, err
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, "", undo, fmt.Errorf("watch of %s closed", name)
			}
			if p, ok := ev.Object.(*corev1.Pod); ok && ready(*p) {
				return time.Since(start), string(p.UID), undo, nil
			}
		case <-timeout:
			return 0, "", undo, fmt.Errorf("pod %s not Ready within a minute", name)
		}
	}
}

// BenchmarkCreateToReadyOnContainerd measures create → Ready of a pod
// whose image is present, on a real kubelet driving containerd's CRI
// plugin through podtrace's interposer, next to the same sandbox, create
// and start sent straight at another containerd's CRI plugin of the same
// configuration (podtrace-cni included): the requests the kubelet sent
// for that pod, read back from its containerd, as crictl would send them.
// One sample of each per iteration (-benchtime 20x for 20).
func BenchmarkCreateToReadyOnContainerd(b *testing.B) {
	const settle = 500 * time.Millisecond
	c := startRealCluster(b, 1)
	ctx := context.Background()
	direct, err := c.host.StartNode(ctx, "bench-direct", "10.244.200.0/24", nil)
	if err != nil {
		b.Fatal(err)
	}
	node := c.host.Node("node-1")
	for _, img := range []internalapi.ImageManagerService{direct.Images, node.Images} {
		if _, err := img.PullImage(ctx, &runtimeapi.ImageSpec{Image: images.Demo}, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	logDir := b.TempDir()
	// sample times one pod through podtrace, then, once it is gone, the
	// same requests straight at containerd (with copies of the files the
	// kubelet mounted). Each starts on a settled machine, not while the
	// kubelet and the control plane still write the last pod's status and
	// events, or tear it down.
	sample := func(i int) (podtrace, straight time.Duration) {
		time.Sleep(settle)
		pd, uid, undo, err := c.throughKubelet(i)
		if err != nil {
			undo()
			b.Fatalf("podtrace: %v", err)
		}
		sb, cc, err := kubeletRequests(node.Runtime, uid)
		if err == nil {
			err = copyMounts(cc, filepath.Join(logDir, fmt.Sprintf("mounts-%d", i)))
		}
		undo()
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(settle)
		dd, undoDirect, err := criDirect(direct.Runtime, sb, cc, logDir, i)
		undoDirect()
		if err != nil {
			b.Fatalf("direct: %v", err)
		}
		return pd, dd
	}
	sample(0) // warm both paths
	var pt, dir []time.Duration
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		pd, dd := sample(i)
		dir, pt = append(dir, dd), append(pt, pd)
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(pt, 0.5)), "podtrace-p50-ms")
	b.ReportMetric(ms(percentile(pt, 0.99)), "podtrace-p99-ms")
	b.ReportMetric(ms(percentile(dir, 0.5)), "direct-p50-ms")
	b.ReportMetric(ms(percentile(dir, 0.99)), "direct-p99-ms")
	b.ReportMetric(float64(percentile(pt, 0.5))/float64(percentile(dir, 0.5)), "p50-ratio")
	var parts []string
	for _, st := range []stages.ID{stages.Persist, stages.Schedule, stages.Bind, stages.Kubelet, stages.Sandbox, stages.CNI, stages.Pull, stages.Create, stages.Start, stages.Hooks, stages.Ready} {
		var ds []time.Duration
		for i := 1; i <= b.N; i++ {
			for _, e := range c.stageEvents(fmt.Sprintf("bench-%d", i), st, stages.Succeeded) {
				ds = append(ds, time.Duration(e.DurationMs*float64(time.Millisecond)))
			}
		}
		if len(ds) > 0 {
			parts = append(parts, fmt.Sprintf("%s %v", st, percentile(ds, 0.5).Round(100*time.Microsecond)))
		}
	}
	b.Logf("podtrace stage medians: %s", strings.Join(parts, ", "))
}
