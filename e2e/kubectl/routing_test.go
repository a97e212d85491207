package kubectle2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/engine/podnet"
	"github.com/podtrace/podtrace/internal/waittest"
)

// routedYAML is a Deployment of one busybox pod serving on port 80 (the
// simulated runtime answers there), Ready while /tmp/ready exists, and a
// NodePort Service in front of it.
func routedYAML(name string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
spec:
  replicas: 1
  selector:
    matchLabels: {app: ` + name + `}
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      containers:
      - name: web
        image: busybox:1.36
        command: [sh, -c, "touch /tmp/ready && sleep 3600"]
        ports: [{containerPort: 80}]
        readinessProbe:
          exec: {command: [cat, /tmp/ready]}
          periodSeconds: 1
          failureThreshold: 1
---
apiVersion: v1
kind: Service
metadata:
  name: ` + name + `
spec:
  type: NodePort
  selector: {app: ` + name + `}
  ports:
  - port: 80
    targetPort: 80
`
}

// TestServiceRouting checks, with kubectl, that Services route through the
// real kube-proxy's rules: from a pod, busybox's wget reaches a Deployment's
// pod by the Service's DNS name, its ClusterIP and its NodePort on a node's
// address; once the only endpoint is not Ready, neither the ClusterIP nor
// the NodePort connects, while the pod itself still answers on its own
// address. kubectl get pods -A lists no pod podtrace does not run: none
// but the tests' own.
func TestServiceRouting(t *testing.T) {
	if !podnet.Inside() {
		t.Skip("Services route only in the pod network namespace (Linux with user namespaces)")
	}
	if _, err := exec.LookPath("nft"); err != nil && os.Getenv("CI") == "" {
		t.Skip("kube-proxy's nftables mode needs nft (Debian's nftables)")
	}
	eachKubectl(t, func(t *testing.T, c *cluster, k *kubectl, suffix string) {
		if c.e.NoServiceProxy != nil {
			t.Fatalf("no kube-proxy: %v", c.e.NoServiceProxy)
		}
		web, client := "routed-"+suffix, "client-"+suffix
		k.ok("apply", "-f", k.writeFile(web+".yaml", routedYAML(web)))
		k.ok("run", client, "--image=busybox:1.36", "--", "sleep", "infinity")
		k.ok("wait", "--for=condition=Ready", "pod/"+client, "--timeout=3m")
		k.ok("rollout", "status", "deployment/"+web, "--timeout=3m")

		clusterIP := k.ok("get", "svc", web, "-o", "jsonpath={.spec.clusterIP}")
		nodePort := k.ok("get", "svc", web, "-o", "jsonpath={.spec.ports[0].nodePort}")
		nodeIP := k.ok("get", "node", "node-2", "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`)
		podIP := k.ok("get", "pods", "-l", "app="+web, "-o", "jsonpath={.items[0].status.podIP}")
		podName := k.ok("get", "pods", "-l", "app="+web, "-o", "jsonpath={.items[0].metadata.name}")
		urls := map[string]string{
			"DNS name":  "http://" + web + "." + k.ns + ".svc.cluster.local",
			"ClusterIP": "http://" + clusterIP,
			"NodePort":  "http://" + nodeIP + ":" + nodePort,
		}
		wget := func(url string) (string, string, error) {
			return k.run("exec", client, "--", "wget", "-qO-", "-T", "3", url)
		}
		for what, url := range urls {
			waittest.EventuallyEvery(t, what+" reaches the Ready pod", poll, waitLong, func() (bool, string) {
				out, errOut, err := wget(url)
				return err == nil && out == "ok\n", out + errOut
			})
		}

		k.ok("exec", podName, "--", "rm", "/tmp/ready")
		waittest.EventuallyEvery(t, "the endpoint not Ready", poll, waitLong, func() (bool, string) {
			out, _, _ := k.run("get", "endpointslices", "-l", "kubernetes.io/service-name="+web,
				"-o", "jsonpath={.items[*].endpoints[*].conditions.ready}")
			return out == "false", out
		})
		for what, url := range map[string]string{"ClusterIP": urls["ClusterIP"], "NodePort": urls["NodePort"]} {
			waittest.EventuallyEvery(t, what+" refused without a Ready endpoint", poll, waitLong, func() (bool, string) {
				out, errOut, err := wget(url)
				return err != nil && strings.Contains(errOut, "wget: can't connect to remote host") &&
					strings.Contains(errOut, "Connection refused"), out + errOut
			})
		}
		if out, errOut, err := wget("http://" + podIP); err != nil || out != "ok\n" {
			t.Errorf("the not-Ready pod itself (%s): %q %s %v, want it still answering ok", podIP, out, errOut, err)
		}

		// The other tests' pods are in namespaces of their own (e2e-...).
		for _, row := range tableRows(k.ok("get", "pods", "-A"))[1:] {
			if !strings.HasPrefix(row[0], "e2e-") ||
				row[0] == k.ns && !(strings.HasPrefix(row[1], "routed-") || strings.HasPrefix(row[1], "client-")) {
				t.Errorf("kubectl get pods -A lists a pod podtrace does not run: %q", row)
			}
		}
	})
}
