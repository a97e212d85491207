package kubectle2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/internal/waittest"
)

// TestPortForward runs kubectl port-forward through the real kubelet to a
// pod of the simulated runtime: the pod and the user's rights are checked
// as kube-apiserver does, the kubelet proxies the forward to the runtime's
// streaming server, as with containerd, and a connection through it
// reaches the pod's address, where the runtime answers for the pod.
func TestPortForward(t *testing.T) {
	eachKubectl(t, func(t *testing.T, c *cluster, k *kubectl, suffix string) {
		name := "pf-" + suffix
		k.ok("run", name, "--image=nginx", "--port=80")
		k.ok("wait", "--for=condition=Ready", "pod/"+name, "--timeout=3m")
		if _, b := k.getThroughForward(t, name); !strings.HasPrefix(string(b), "HTTP/1.0 200 OK") || !strings.HasSuffix(string(b), "ok\n") {
			t.Errorf("read %q through the forward, want the pod's 200 ok", b)
		}

		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"port-forward", "missing-" + suffix, "8080:80"},
				`Error from server (NotFound): pods "missing-` + suffix + `" not found`},
			{[]string{"--context", "podtrace-viewer", "port-forward", name, ":80"},
				`error: error upgrading connection: pods "` + name + `" is forbidden: User "viewer" cannot create resource "pods/portforward" in API group "" in the namespace "` + k.ns + `"`},
		} {
			if got := k.fails(tc.args...); !strings.Contains(got, tc.want) {
				t.Errorf("kubectl %s:\n%s\nwant %q", strings.Join(tc.args, " "), got, tc.want)
			}
		}

		t.Run("service endpoints", func(t *testing.T) { serviceEndpoints(t, k, "svc-"+suffix) })
	})
}

// serviceEndpoints checks what a user checks first when a Service does not
// answer: that its endpoints are the Ready pods' IPs. The real kubelet's
// readiness probe (httpGet on port 80) gates them, and the EndpointSlice
// controller lists the pods' own IPs, which the API accepts only because
// they are not loopback addresses (engine/podnet).
func serviceEndpoints(t *testing.T, k *kubectl, name string) {
	if !podnet.Inside() {
		t.Skip("no pod network namespace here (engine/podnet): pods answer on loopback addresses, which EndpointSlices refuse")
	}
	k.apply(`apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `}
spec:
  replicas: 2
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
        readinessProbe: {httpGet: {path: /, port: 80}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: ` + name + `}
spec:
  selector: {app: ` + name + `}
  ports: [{port: 80}]
`)
	k.ok("rollout", "status", "deploy/"+name, "--timeout=3m")
	podIPs := strings.Fields(k.ok("get", "pods", "-l", "app="+name, "-o", "jsonpath={.items[*].status.podIP}"))
	slices.Sort(podIPs)
	if len(podIPs) != 2 {
		t.Fatalf("service %s: pod IPs %v, want 2", name, podIPs)
	}
	waittest.EventuallyEvery(t, "service "+name+"'s ready endpoints to be the pods' IPs "+strings.Join(podIPs, " "), poll, waitLong, func() (bool, string) {
		out := k.ok("get", "endpointslices", "-l", "kubernetes.io/service-name="+name,
			"-o", "jsonpath={.items[*].endpoints[?(@.conditions.ready==true)].addresses[0]}")
		endpoints := strings.Fields(out)
		slices.Sort(endpoints)
		return slices.Equal(endpoints, podIPs), out
	})
	for _, ip := range podIPs {
		if !strings.HasPrefix(ip, "10.244.") {
			t.Errorf("pod IP %s, want one of the nodes' pod CIDRs (10.244.0.0/16)", ip)
		}
	}
	if out := k.ok("describe", "service", name); !strings.Contains(out, podIPs[0]+":80") {
		t.Errorf("kubectl describe service %s does not list %s:80:\n%s", name, podIPs[0], out)
	}
	k.ok("delete", "deploy/"+name, "svc/"+name)
}
