package engine_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/controlplane"
	"github.com/podtrace/podtrace/engine/enginetest"
	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/internal/testproc"
)

// TestClusterDNS runs what a user checks of the cluster's DNS with
// kubectl, on one cluster: the kube-dns Service, names resolved from a
// busybox pod by the real CoreDNS, and no MissingClusterDNS Events.
func TestClusterDNS(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	if !podnet.Inside() {
		t.Skip("cluster DNS needs the pod network namespace (Linux with user namespaces)")
	}
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	e, _ := start(t, 1)
	if e.NoClusterDNS != nil || e.DNS == nil {
		t.Fatalf("no cluster DNS: %v", e.NoClusterDNS)
	}
	home := t.TempDir()
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+e.Kubeconfig, "HOME="+home)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String()
	}
	ctx := context.Background()
	pods := e.AdminClient().CoreV1().Pods("default")
	client := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "busybox", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}}
	if _, err := pods.Create(ctx, client, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("kube-dns", func(t *testing.T) {
		row := rowNamed(kubectl(t, "get", "svc", "-n", "kube-system"), "kube-dns")
		if len(row) < 5 || row[1] != "ClusterIP" || row[2] != engine.ClusterDNSIP || row[4] != "53/UDP,53/TCP,9153/TCP" {
			t.Errorf("kubectl get svc -n kube-system: kube-dns %q, want ClusterIP %s 53/UDP,53/TCP,9153/TCP", row, engine.ClusterDNSIP)
		}
		row = rowNamed(kubectl(t, "get", "endpointslices", "-n", "kube-system"), "kube-dns")
		if len(row) < 4 || row[1] != "IPv4" || row[2] != "53,53,9153" || row[3] != controlplane.AdvertiseAddress {
			t.Errorf("kubectl get endpointslices -n kube-system: kube-dns %q, want IPv4 53,53,9153 %s", row, controlplane.AdvertiseAddress)
		}
		if got := kubectl(t, "get", "pods", "-n", "kube-system", "-o", "name"); got != "" {
			t.Errorf("kube-system has pods podtrace does not run: %s", got)
		}
	})

	waitPodReady(t, e, "client")
	t.Run("resolv.conf", func(t *testing.T) {
		got := kubectl(t, "exec", "client", "--", "cat", "/etc/resolv.conf")
		want := "search default.svc.cluster.local svc.cluster.local cluster.local"
		if !strings.HasPrefix(got, want) || !strings.Contains(got, "\nnameserver "+engine.ClusterDNSIP+"\noptions ndots:5\n") {
			t.Errorf("the pod's /etc/resolv.conf:\n%s\nwant %q …, nameserver %s, options ndots:5", got, want, engine.ClusterDNSIP)
		}
	})

	t.Run("service name", func(t *testing.T) {
		svc, err := e.AdminClient().CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := kubectl(t, "exec", "client", "--", "nslookup", "web.default.svc.cluster.local")
		want := "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\nName:\tweb.default.svc.cluster.local\nAddress: " + svc.Spec.ClusterIP + "\n\n\n"
		if got != want {
			t.Errorf("nslookup web.default.svc.cluster.local:\n%s\nwant:\n%s", got, want)
		}
		got = kubectl(t, "exec", "client", "--", "getent", "hosts", "web")
		if want := svc.Spec.ClusterIP; !strings.HasPrefix(got, want+" ") || !strings.Contains(got, " web.default.svc.cluster.local ") {
			t.Errorf("getent hosts web: %q, want %s web.default.svc.cluster.local …", got, want)
		}
	})

	t.Run("other names", func(t *testing.T) {
		// CoreDNS forwards nowhere: a name outside the cluster does not exist.
		got := kubectl(t, "exec", "client", "--", "sh", "-c", "nslookup example.com; echo exit $?")
		want := "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n" +
			"** server can't find example.com: NXDOMAIN\n\n** server can't find example.com: NXDOMAIN\n\nexit 1\n"
		if got != want {
			t.Errorf("nslookup example.com:\n%s\nwant:\n%s", got, want)
		}
	})

	t.Run("headless pod name", func(t *testing.T) {
		_, err := e.AdminClient().CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "db"}, Ports: []corev1.ServicePort{{Port: 5432}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		db := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Labels: map[string]string{"app": "db"}}, Spec: corev1.PodSpec{
			Hostname: "db-0", Subdomain: "db", Containers: []corev1.Container{{Name: "db", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}}
		if _, err := pods.Create(ctx, db, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ip := waitPodReady(t, e, "db-0").Status.PodIP
		want := "Name:\tdb-0.db.default.svc.cluster.local\nAddress: " + ip + "\n"
		var got string
		enginetest.WaitFor(t, 30*time.Second, "the pod's name in DNS", func() bool {
			got = kubectl(t, "exec", "client", "--", "sh", "-c", "nslookup db-0.db.default.svc.cluster.local || true")
			return strings.Contains(got, want)
		})
	})

	t.Run("no MissingClusterDNS", func(t *testing.T) {
		evs, err := e.AdminClient().CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=MissingClusterDNS"})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs.Items {
			t.Errorf("%s %s/%s: %s", ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Message)
		}
	})
}

// waitPodReady waits for pod default/name to be Ready and returns it.
func waitPodReady(t *testing.T, e *engine.Engine, name string) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	enginetest.WaitFor(t, 60*time.Second, name+" Ready", func() bool {
		var err error
		p, err = e.AdminClient().CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && isReady(p)
	})
	return p
}

// rowNamed returns the fields of the row of a kubectl table whose first
// column is name.
func rowNamed(table, name string) []string {
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	return nil
}
