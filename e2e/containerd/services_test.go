package containerd_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	crictrd "github.com/podtrace/podtrace/engine/cri/containerd"
	"github.com/podtrace/podtrace/images"
)

// servicesManifest is a NodePort Service in front of two Ready demo pods,
// one on each node, and one that never gets Ready (its readiness probe
// fails) with the Service's labels; and a busybox client on each node.
var servicesManifest = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
      containers:
      - name: demo
        image: demo:1.0
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata:
  name: web-unready
  labels: {app: web}
spec:
  nodeName: node-1
  terminationGracePeriodSeconds: 1
  containers:
  - name: demo
    image: demo:1.0
    readinessProbe:
      exec: {command: [/demo, fail, never ready]}
      periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata:
  name: hostport
spec:
  nodeName: node-1
  terminationGracePeriodSeconds: 1
  containers:
  - name: demo
    image: demo:1.0
    ports:
    - {containerPort: 8080, hostPort: 54323}
    - {containerPort: 8080, hostPort: 54324, hostIP: 127.0.0.1}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: NodePort
  selector: {app: web}
  ports:
  - {port: 80, targetPort: 8080}
---
apiVersion: v1
kind: Pod
metadata:
  name: client-1
  labels: {app: client}
spec:
  nodeName: node-1
  terminationGracePeriodSeconds: 1
  containers:
  - {name: sh, image: %[1]s, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata:
  name: client-2
  labels: {app: client}
spec:
  nodeName: node-2
  terminationGracePeriodSeconds: 1
  containers:
  - {name: sh, image: %[1]s, command: [sleep, "3600"]}
`, images.E2EBusybox)

// proxyOwnerFile is where podtrace claims kube-proxy's tables on the host.
const proxyOwnerFile = "/run/podtrace/kube-proxy.owner"

// TestServicesAndDNSOnContainerd checks cluster DNS and Services on real
// containers, with the real kubectl, as a user of a kind cluster would:
// busybox in a pod on each node resolves a Service's name and
// kubernetes.default through the cluster's CoreDNS, fetches from the
// Service by name, ClusterIP and each node's NodePort, and only ever gets
// a Ready pod's answer (both of them: the one on its own bridge too),
// never the not-Ready one's; no pod has a MissingClusterDNS event; and
// once podtrace stops, kube-proxy's nftables tables are gone.
func TestServicesAndDNSOnContainerd(t *testing.T) {
	needRoot(t)
	t.Cleanup(func() { checkNoProxyTables(t); checkNoHostPortChains(t) })           // runs after the cluster's own cleanup
	c := startRealCluster(t, 2, func(h *crictrd.HostConfig) { h.E2EImages = true }) // the suite's busybox: nslookup, seq, timeout
	if c.NoServiceProxy != nil || c.Proxy == nil || c.NoClusterDNS != nil || c.DNS == nil {
		t.Fatalf("kube-proxy %v, cluster DNS %v", c.NoServiceProxy, c.NoClusterDNS)
	}
	f := filepath.Join(t.TempDir(), "services.yaml")
	if err := os.WriteFile(f, []byte(servicesManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	c.kubectl(t, "apply", "-f", f)
	web := c.waitPods(t, "app=web", 3*time.Minute, "2 Ready web pods and web-unready running", func(ps []corev1.Pod) bool {
		n, unready := 0, false
		for _, p := range ps {
			if ready(p) {
				n++
			}
			unready = unready || (p.Name == "web-unready" && p.Status.Phase == corev1.PodRunning && !ready(p))
		}
		return n == 2 && unready && len(ps) == 3
	})
	c.waitPods(t, "app=client", 2*time.Minute, "2 running clients", func(ps []corev1.Pod) bool {
		return len(ps) == 2 && ready(ps[0]) && ready(ps[1])
	})
	readyPods := map[string]bool{}
	for _, p := range web {
		if ready(p) {
			readyPods[p.Name] = true
		}
	}
	clusterIP := c.kubectl(t, "get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")
	nodePort := c.kubectl(t, "get", "svc", "web", "-o", "jsonpath={.spec.ports[0].nodePort}")

	t.Run("dns", func(t *testing.T) {
		// busybox's nslookup asks for the name as given (no search list).
		for name, want := range map[string]string{"web.default.svc.cluster.local": clusterIP, "kubernetes.default.svc.cluster.local": "10.96.0.1"} {
			out := c.execOut(t, "client-1", "nslookup", name)
			if !regexp.MustCompile(`Address:\s+` + regexp.QuoteMeta(want) + `\b`).MatchString(out) {
				t.Errorf("nslookup %s in client-1, want %s:\n%s", name, want, out)
			}
		}
		// ping resolves through the C library, with resolv.conf's search
		// list; the ClusterIP does not answer ICMP.
		out := c.execOut(t, "client-2", "sh", "-c", "ping -c 1 -W 1 kubernetes.default; true")
		if !strings.Contains(out, "PING kubernetes.default (10.96.0.1)") {
			t.Errorf("ping kubernetes.default in client-2, want it resolved to 10.96.0.1:\n%s", out)
		}
	})
	t.Run("clusterip", func(t *testing.T) {
		for _, client := range []string{"client-1", "client-2"} {
			c.fetchAll(t, client, "http://web.default.svc.cluster.local/", readyPods, true)
		}
		c.fetchAll(t, "client-2", "http://"+clusterIP+"/", readyPods, false)
		c.fetchAll(t, "client-1", "http://web/", readyPods, false) // the search list
	})
	t.Run("nodeport", func(t *testing.T) {
		for _, n := range c.NodeSet.Nodes() {
			gw := c.host.Node(n.Name).Gateway.String()
			c.fetchAll(t, "client-1", "http://"+net.JoinHostPort(gw, nodePort)+"/", readyPods, false)
		}
	})
	t.Run("hostport", func(t *testing.T) {
		c.waitPods(t, "", 2*time.Minute, "the hostport pod running", func(ps []corev1.Pod) bool {
			for _, p := range ps {
				if p.Name == "hostport" {
					return p.Status.Phase == corev1.PodRunning
				}
			}
			return false
		})
		gw := c.host.Node("node-1").Gateway.String()
		// From a pod on the other node, at node-1's address.
		out := c.execOut(t, "client-2", "sh", "-c", "timeout 5 wget -q -O - http://"+net.JoinHostPort(gw, "54323")+"/ || echo FAILED")
		if !strings.HasPrefix(out, "hello from hostport,") {
			t.Errorf("wget node-1's hostPort 54323 from client-2: %q, want the hostport pod's answer", out)
		}
		// From the machine, on loopback (hostIP 127.0.0.1).
		client := http.Client{Timeout: 5 * time.Second}
		if resp, err := client.Get("http://127.0.0.1:54324/"); err != nil {
			t.Errorf("GET 127.0.0.1:54324 (hostIP 127.0.0.1): %v", err)
		} else {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.HasPrefix(string(body), "hello from hostport,") {
				t.Errorf("GET 127.0.0.1:54324 (hostIP 127.0.0.1): %q, want the hostport pod's answer", body)
			}
		}
		// A hostPort without a hostIP is node-1's address's alone, never
		// every address of the machine: each of its DNAT rules names it.
		rules, err := exec.Command("iptables-save", "-t", "nat").Output()
		if err != nil {
			t.Fatalf("iptables-save: %v", err)
		}
		n := 0
		for _, r := range strings.Split(string(rules), "\n") {
			if strings.Contains(r, "--dport 54323") && strings.Contains(r, "DNAT") {
				n++
				if !strings.Contains(r, "-d "+gw+"/32") {
					t.Errorf("hostPort 54323's rule is not node-1's address (%s) alone: %s", gw, r)
				}
			}
		}
		if n == 0 {
			t.Errorf("no DNAT rule for hostPort 54323:\n%s", rules)
		}
	})
	t.Run("no MissingClusterDNS", func(t *testing.T) {
		evs, err := c.AdminClient().CoreV1().Events("").List(context.Background(),
			metav1.ListOptions{FieldSelector: "reason=MissingClusterDNS"})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs.Items) > 0 {
			t.Errorf("%d MissingClusterDNS events, first: %s", len(evs.Items), evs.Items[0].Message)
		}
	})
}

// fetchAll fetches url 20 times with busybox's wget in client and checks
// that every answer is a Ready pod's; with all, that every Ready pod
// answered at least once.
func (c *realCluster) fetchAll(t *testing.T, client, url string, readyPods map[string]bool, all bool) {
	t.Helper()
	out := c.execOut(t, client, "sh", "-c",
		// (Debian's busybox 1.35 wget crashes on -T.)
		`for i in $(seq 20); do timeout 5 wget -q -O - `+url+` || echo FAILED; done`)
	answered := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		pod, _, ok := strings.Cut(strings.TrimPrefix(line, "hello from "), ",")
		if !ok || !readyPods[pod] {
			t.Errorf("wget %s in %s answered %q, want a Ready web pod's answer", url, client, line)
			continue
		}
		answered[pod]++
	}
	if all && len(answered) != len(readyPods) {
		t.Errorf("wget %s in %s: answers %v, want every Ready pod of %v", url, client, answered, readyPods)
	}
}

// execOut runs a command in pod with kubectl exec and returns its
// standard output (kubectl's own warnings are on its standard error).
func (c *realCluster) execOut(t *testing.T, pod string, cmd ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", c.Kubeconfig, "exec", pod, "--"}, cmd...)...).Output()
	if err != nil {
		t.Errorf("kubectl exec %s -- %s: %v\n%s", pod, strings.Join(cmd, " "), err, out)
	}
	return string(out)
}

// checkNoProxyTables fails if kube-proxy's nftables tables or its claim
// on them are left on the host, unless another podtrace running now has
// claimed them.
func checkNoProxyTables(t *testing.T) {
	if b, err := os.ReadFile(proxyOwnerFile); err == nil {
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid != os.Getpid() && syscall.Kill(pid, 0) == nil {
			t.Logf("podtrace pid %d runs kube-proxy on this machine now: its tables are its own", pid)
			return
		}
	}
	for _, family := range []string{"ip", "ip6"} {
		if out, err := exec.Command("nft", "list", "table", family, "kube-proxy").CombinedOutput(); err == nil {
			t.Errorf("nftables table %s kube-proxy left after podtrace stopped:\n%.500s", family, out)
		}
	}
	if _, err := os.Stat(proxyOwnerFile); err == nil {
		t.Errorf("kube-proxy's claim on the host's tables (%s) left after podtrace stopped", proxyOwnerFile)
	}
}

// checkNoHostPortChains fails if the portmap plugin's chains are left in
// the machine's nat table once podtrace has stopped.
func checkNoHostPortChains(t *testing.T) {
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "CNI-HOSTPORT-") {
			t.Errorf("portmap's rules left after podtrace stopped:\n%s", out)
			return
		}
	}
}
