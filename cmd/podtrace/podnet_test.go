package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/internal/podtracebin"
	"github.com/podtrace/podtrace/internal/syncbuf"
	"github.com/podtrace/podtrace/internal/waittest"
)

// TestServeInPodNetwork runs `podtrace serve` as a user
// would, from the host's network namespace: podtrace runs itself again in
// a pod network namespace of its own (engine/podnet), and the API server
// is still reached on the host's loopback address the kubeconfig names.
// The nodes have InternalIPs, a Service gets the Ready pods' own IPs as
// endpoints, no pod address listens in the host's namespace, and an
// interrupt stops the whole thing cleanly.
func TestServeInPodNetwork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pod network namespaces are Linux's")
	}
	t.Parallel() // the other tests' clusters run in namespaces of their own
	bin := podtracebin.Path(t)
	dir := t.TempDir()
	var out bytes.Buffer
	var errOut syncbuf.Buffer
	serve := startBin(t, bin, &out, &errOut, "serve", "--nodes", "2", "--data-dir", dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	waitFile(t, kubeconfig, clusterStart, func(b []byte) bool { return len(b) > 0 })
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Host, "https://127.0.0.1:") {
		t.Fatalf("kubeconfig server %s, want the host's loopback", cfg.Host)
	}
	c := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	eventually := func(what string, ok func() (bool, string)) {
		t.Helper()
		waittest.EventuallyEvery(t, what, 200*time.Millisecond, 2*time.Minute, func() (bool, string) {
			done, got := ok()
			return done, got + "\nserve stderr: " + errOut.String()
		})
	}
	eventually("2 nodes with InternalIPs", func() (bool, string) {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var ips []string
		for _, n := range nodes.Items {
			for _, a := range n.Status.Addresses {
				if a.Type == corev1.NodeInternalIP {
					ips = append(ips, a.Address)
				}
			}
		}
		slices.Sort(ips)
		return slices.Equal(ips, []string{"172.18.0.2", "172.18.0.3"}), strings.Join(ips, ",")
	})

	labels := map[string]string{"app": "web"}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}}, PeriodSeconds: 1}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2),
		Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{{ContainerPort: 80}}, ReadinessProbe: probe}}}}}}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Selector: labels,
		Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := c.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var podIPs []string
	eventually("the Service's endpoints to be its 2 Ready pods' IPs", func() (bool, string) {
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		podIPs = podIPs[:0]
		for _, p := range pods.Items {
			if p.Status.PodIP != "" {
				podIPs = append(podIPs, p.Status.PodIP)
			}
		}
		slices.Sort(podIPs)
		eps, err := c.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err.Error()
		}
		var ready []string
		for _, s := range eps.Items {
			for _, ep := range s.Endpoints {
				if ptr.Deref(ep.Conditions.Ready, false) {
					ready = append(ready, ep.Addresses...)
				}
			}
		}
		slices.Sort(ready)
		return len(podIPs) == 2 && strings.Join(ready, ",") == strings.Join(podIPs, ","),
			"endpoints " + strings.Join(ready, ",") + ", pods " + strings.Join(podIPs, ",")
	})
	for _, ip := range podIPs {
		if !strings.HasPrefix(ip, "10.244.") {
			t.Errorf("pod IP %s, want one from the nodes' pod CIDRs", ip)
		}
	}
	// Nothing of this podtrace listens on a pod address in the host's
	// network namespace (the kernel's own socket table, read without
	// sending any traffic; other tests' clusters on real containers have
	// their nodes' addresses there).
	tcp, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	own := socketInodes(t, serve.Process.Pid)
	if len(own) == 0 { // it serves the API on the host's loopback at least
		t.Error("no socket found open in podtrace's processes")
	}
	for _, line := range strings.Split(string(tcp), "\n")[1:] {
		f := strings.Fields(line)
		// 0AF4 is 10.244 in the table's little-endian hex; 0A is LISTEN.
		if len(f) > 9 && f[3] == "0A" && strings.HasSuffix(strings.Split(f[1], ":")[0], "F40A") && own[f[9]] {
			t.Errorf("a socket of podtrace's listens on a pod address in the host's namespace: %s", line)
		}
	}

	if err := serve.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := serve.Wait(); err != nil {
		t.Errorf("serve did not stop cleanly: %v\n%s", err, errOut.String())
	}
	if _, err := c.Discovery().ServerVersion(); err == nil {
		t.Error("the API server still answers after serve stopped")
	}
}

// socketInodes returns the inodes of the sockets that process pid and its
// descendants hold open, as /proc/net/tcp names them.
func socketInodes(t *testing.T, pid int) map[string]bool {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	children := map[int][]int{}
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // it has exited
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after its ')'.
		rest := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(rest) < 2 {
			continue
		}
		child, _ := strconv.Atoi(strings.Fields(string(b))[0])
		if parent, err := strconv.Atoi(rest[1]); err == nil {
			children[parent] = append(children[parent], child)
		}
	}
	inodes := map[string]bool{}
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		queue = append(queue, children[p]...)
		fds, _ := os.ReadDir("/proc/" + strconv.Itoa(p) + "/fd")
		for _, fd := range fds {
			link, err := os.Readlink("/proc/" + strconv.Itoa(p) + "/fd/" + fd.Name())
			if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
				inodes[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	return inodes
}
