package controlplane

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func nodePortService(name, clusterIP string, nodePort int32) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: clusterIP, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, NodePort: nodePort}}}}
}

// TestServiceAllocationsSurviveRestart creates a Service, restarts the
// control plane on the same data dir, and checks that its cluster IP and
// node port are still taken, and free again once it is deleted.
func TestServiceAllocationsSurviveRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd twice")
	}
	dir := t.TempDir()
	ctx := context.Background()
	start := func() (*ControlPlane, kubernetes.Interface) {
		cp, err := Start(ctx, Config{DataDir: dir, UnsafeNoFsync: true})
		if err != nil {
			t.Fatal(err)
		}
		return cp, kubernetes.NewForConfigOrDie(cp.AdminConfig())
	}
	cp, c := start()
	kube, err := c.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || kube.Spec.ClusterIP != "10.96.0.1" || kube.Spec.Ports[0].Name != "https" || kube.Spec.Ports[0].Port != 443 {
		t.Fatalf("kubernetes service: %v %+v", err, kube)
	}
	web, err := c.CoreV1().Services("default").Create(ctx, nodePortService("web", "", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, np := web.Spec.ClusterIP, web.Spec.Ports[0].NodePort
	if np < 30000 || np > 32767 {
		t.Fatalf("node port %d", np)
	}
	cp.Close()

	cp, c = start()
	defer cp.Close()
	_, err = c.CoreV1().Services("default").Create(ctx, nodePortService("again", ip, 0), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "failed to allocate IP "+ip+": provided IP is already allocated") {
		t.Errorf("cluster IP %s after restart: %v", ip, err)
	}
	_, err = c.CoreV1().Services("default").Create(ctx, nodePortService("again", "", np), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "provided port is already allocated") {
		t.Errorf("node port %d after restart: %v", np, err)
	}
	if err := c.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := c.CoreV1().Services("default").Create(ctx, nodePortService("again", ip, np), metav1.CreateOptions{})
	if err != nil || again.Spec.ClusterIP != ip || again.Spec.Ports[0].NodePort != np {
		t.Errorf("released values not reusable: %v", err)
	}
	// spec.clusterIP is immutable.
	again.Spec.ClusterIP, again.Spec.ClusterIPs = "10.96.0.99", []string{"10.96.0.99"}
	_, err = c.CoreV1().Services("default").Update(ctx, again, metav1.UpdateOptions{})
	if want := `Service "again" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.0.99"]: may not change once set`; err == nil || err.Error() != want {
		t.Errorf("changing clusterIP: %v, want %s", err, want)
	}
}
