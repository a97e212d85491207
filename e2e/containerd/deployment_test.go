package containerd_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/engine/kubelet/network/cni/netns"
	"github.com/podtrace/podtrace/engine/kubelet/runtime/containerd"
	"github.com/podtrace/podtrace/stages"
)

// getFrom fetches url with a socket opened in the network namespace ns.
func getFrom(ns, url string) (string, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, nw, addr string) (net.Conn, error) {
		var c net.Conn
		err := netns.Do(ns, func() error {
			var err error
			c, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, nw, addr)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestDeploymentOfDemoServerOnRealContainers(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	manifest, err := os.ReadFile("testdata/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, err := apply.New(c.AdminRestConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, manifest, "testdata/demo.yaml"); err != nil {
		t.Fatal(err)
	}
	pods := c.waitPods(t, "app=demo", 3*time.Minute, "3 Ready demo pods", func(ps []corev1.Pod) bool {
		n := 0
		for _, p := range ps {
			if ready(p) {
				n++
			}
		}
		return n == 3 && len(ps) == 3
	})

	hostNS, _ := os.Readlink("/proc/self/ns/net")
	seenIP, seenNS := map[string]bool{}, map[string]bool{hostNS: true}
	for _, p := range pods {
		ip := p.Status.PodIP
		if ip == "" || seenIP[ip] {
			t.Fatalf("pod %s IP %q (seen %v)", p.Name, ip, seenIP)
		}
		seenIP[ip] = true
		cs := p.Status.ContainerStatuses
		if len(cs) != 1 || !strings.HasPrefix(cs[0].ContainerID, "containerd://") || !strings.HasPrefix(cs[0].ImageID, "podtrace.dev/demo@sha256:") {
			t.Fatalf("pod %s container status %+v", p.Name, cs)
		}
		// The CNI stage event names the address the pod got.
		if evs := c.stageEvents(p.Name, stages.CNI, stages.Succeeded); len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Message, ip) {
			t.Errorf("pod %s cni events %+v, want its IP %s", p.Name, evs, ip)
		}
		// The container's process lives in a network namespace of its own.
		rt := c.host.Runtime(p.Spec.NodeName)
		nctx := namespaces.WithNamespace(ctx, rt.Namespace())
		ctr, err := rt.Client().LoadContainer(nctx, strings.TrimPrefix(cs[0].ContainerID, "containerd://"))
		if err != nil {
			t.Fatal(err)
		}
		task, err := ctr.Task(nctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", task.Pid()))
		if err != nil || seenNS[ns] {
			t.Fatalf("pod %s process %d in netns %q (%v), already seen: %v", p.Name, task.Pid(), ns, err, seenNS)
		}
		seenNS[ns] = true
		// The demo server answers on the pod IP from its node.
		body, err := getFrom(c.host.Network(p.Spec.NodeName).NodeNetNS(), "http://"+ip+":8080/from-node")
		if err != nil || !strings.Contains(body, "hello from "+p.Name) {
			t.Fatalf("GET %s:8080 from node %s: %q %v", ip, p.Spec.NodeName, body, err)
		}
		// kubectl logs (pods/log through the API server) shows its real output.
		// The output reaches the log through a pipe: retry briefly, as a
		// user re-running kubectl logs would.
		var raw []byte
		for i := 0; i < 50; i++ {
			if raw, err = c.AdminClient().CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{Container: "demo"}).DoRaw(ctx); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), "GET /from-node from 10.244.") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !strings.Contains(string(raw), "demo server "+p.Name+" listening on :8080") || !strings.Contains(string(raw), "GET /from-node from 10.244.") {
			t.Fatalf("logs of %s:\n%s", p.Name, raw)
		}
	}

	if err := c.AdminClient().AppsV1().Deployments("default").Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitPods(t, "app=demo", 2*time.Minute, "demo pods gone", func(ps []corev1.Pod) bool { return len(ps) == 0 })
	for _, p := range pods {
		if len(c.stageEvents(p.Name, stages.Cleanup, stages.Succeeded)) == 0 {
			t.Errorf("pod %s has no cleanup event", p.Name)
		}
	}
	for _, node := range []string{"node-1", "node-2", "node-3"} {
		assertNodeClean(t, c.host.Runtime(node), c.host.Network(node))
	}
}

// assertNodeClean checks that no task, container, active snapshot, pod
// network namespace or IP allocation of the node is left.
func assertNodeClean(t *testing.T, rt *containerd.Runtime, pl interface{ Allocations() ([]string, error) }) {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), rt.Namespace())
	cl := rt.Client()
	if ctrs, err := cl.Containers(ctx); err != nil || len(ctrs) != 0 {
		t.Errorf("%s: containers left: %d %v", rt.Namespace(), len(ctrs), err)
	}
	if tasks, err := cl.TaskService().List(ctx, nil); err != nil || len(tasks.Tasks) != 0 {
		t.Errorf("%s: tasks left: %v %v", rt.Namespace(), tasks, err)
	}
	active := 0
	if err := cl.SnapshotService("overlayfs").Walk(ctx, func(_ context.Context, i snapshots.Info) error {
		if i.Kind == snapshots.KindActive {
			active++
		}
		return nil
	}); err != nil || active != 0 {
		t.Errorf("%s: active snapshots left: %d %v", rt.Namespace(), active, err)
	}
	if ids := rt.SandboxIDs(); len(ids) != 0 {
		t.Errorf("%s: sandboxes left: %v", rt.Namespace(), ids)
	}
	if n, err := rt.NetNSCount(); err != nil || n != 0 {
		t.Errorf("%s: pod network namespaces left: %d %v", rt.Namespace(), n, err)
	}
	if a, err := pl.Allocations(); err != nil || len(a) != 0 {
		t.Errorf("%s: IP allocations left: %v %v", rt.Namespace(), a, err)
	}
}
