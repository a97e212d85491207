package scenario

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/apply"
	"github.com/podtrace/podtrace/internal/testproc"
	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

// variantMessages is what each catalogue variant must show in its stage's
// events (status, reason and a message substring), in upstream wording.
// Variants whose effect is not an event of their stage (a delay, a hang, a
// node going NotReady, a readiness that never comes) are covered by
// TestEveryStageFaultBreaksAndRecovers and the node-not-ready scenario.
var variantMessages = map[string]Expectation{
	"authn/expired-token":       {Status: stages.Failed, Message: "Unauthorized"},
	"authz/forbidden":           {Status: stages.Failed, Message: `deployments.apps is forbidden: User "kubernetes-admin" cannot create resource "deployments" in API group "apps" in the namespace "default"`},
	"authz/rbac-lost":           {Status: stages.Failed, Message: `User "system:serviceaccount:kube-system:deployment-controller" cannot create resource "replicasets"`},
	"admission/webhook-deny":    {Status: stages.Failed, Message: `admission webhook "deny.podtrace.dev" denied the request: Deployment`},
	"admission/quota":           {Status: stages.Failed, Message: "exceeded quota: compute-quota"},
	"persist/etcd-timeout":      {Status: stages.Failed, Message: "etcdserver: request timed out"},
	"persist/conflict":          {Status: stages.Failed, Message: "the object has been modified; please apply your changes to the latest version and try again"},
	"reconcile/etcd-timeout":    {Status: stages.Retrying, Message: "etcdserver: request timed out"},
	"reconcile/forbidden":       {Status: stages.Retrying, Message: `User "system:serviceaccount:kube-system:deployment-controller" cannot create resource "replicasets" in API group "apps"`},
	"reconcile/quota":           {Status: stages.Retrying, Message: "exceeded quota: podtrace-fault, requested: count/replicasets.apps=1"},
	"reconcile/timeout":         {Status: stages.Retrying, Message: "Timeout: request did not complete within requested timeout - context deadline exceeded"},
	"reconcile/controller-down": {Status: stages.Waiting, Reason: "Hang"},
	"schedule/cpu":              {Status: stages.Retrying, Reason: "FailedScheduling", Message: "0/2 nodes are available: 2 Insufficient cpu."},
	"schedule/memory":           {Status: stages.Retrying, Reason: "FailedScheduling", Message: "0/2 nodes are available: 2 Insufficient memory."},
	"schedule/pods":             {Status: stages.Retrying, Reason: "FailedScheduling", Message: "0/2 nodes are available: 2 Too many pods."},
	"schedule/ports":            {Status: stages.Retrying, Reason: "FailedScheduling", Message: "2 node(s) didn't have free ports for the requested pod ports."},
	"schedule/taint":            {Status: stages.Retrying, Reason: "FailedScheduling", Message: "2 node(s) had untolerated taint(s)."},
	"schedule/selector":         {Status: stages.Retrying, Reason: "FailedScheduling", Message: "2 node(s) didn't match Pod's node affinity/selector."},
	"schedule/unschedulable":    {Status: stages.Retrying, Reason: "FailedScheduling", Message: "2 node(s) were unschedulable."},
	"bind/conflict":             {Status: stages.Retrying, Reason: "FailedScheduling", Message: `Operation cannot be fulfilled on pods/binding`},
	"sandbox/runtime-error":     {Status: stages.Retrying, Reason: "FailedCreatePodSandBox", Message: "OCI runtime create failed: runc create failed"},
	"cni/ipam-exhausted":        {Status: stages.Retrying, Reason: "FailedCreatePodSandBox", Message: "failed to allocate for range 0: no IP addresses available in range set"},
	"cni/plugin-error":          {Status: stages.Retrying, Reason: "FailedCreatePodSandBox", Message: `plugin type="bridge" name="podtrace" failed (add): failed to set bridge addr`},
	"pull/not-found":            {Reason: "ErrImagePull", Message: `docker.io/library/nginx:1.27: not found`},
	"pull/unauthorized":         {Reason: "ErrImagePull", Message: "pull access denied, repository does not exist or may require authorization"},
	"pull/unreachable":          {Reason: "ErrImagePull", Message: "dial tcp 104.18.0.1:443: i/o timeout"},
	"create/create-error":       {Reason: "CreateContainerError", Message: "failed to create containerd container"},
	"start/crash":               {Reason: "RunContainerError", Message: "executable file not found in $PATH"},
	"hooks/exit-1":              {Reason: "FailedPostStartHook", Message: "Exec lifecycle hook ([sh -c"},
}

// TestEveryVariantGivesItsMessage injects each variant of the catalogue in
// turn and checks the stage event it produces.
func TestEveryVariantGivesItsMessage(t *testing.T) {
	if testproc.OwnProcess(t) {
		return
	}
	skip := map[string]bool{"pull/slow": true, "kubelet/node-not-ready": true, "ready/never-ready": true}
	for _, id := range stages.Lifecycle {
		for _, v := range stages.Variants(id) {
			key := string(id) + "/" + v.Name
			if _, ok := variantMessages[key]; !ok && !skip[key] {
				t.Errorf("variant %s has no expected message", key)
			}
		}
	}
	e := startEngine(t, 2, 20)
	ctx := context.Background()
	a, err := apply.New(e.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	rec := e.Hub.Record()
	defer rec.Stop()
	i := 0
	for _, id := range stages.Lifecycle {
		for _, v := range stages.Variants(id) {
			key := string(id) + "/" + v.Name
			want, ok := variantMessages[key]
			if !ok {
				continue
			}
			i++
			name := fmt.Sprintf("v%d-%s", i, id)
			t.Run(key, func(t *testing.T) {
				f, err := stages.ResolveVariant(stages.Fault{Stage: id, Kind: stages.Fail, Variant: v.Name})
				if err != nil {
					t.Fatal(err)
				}
				added := e.Tracer.Faults.Add(f)
				t.Cleanup(func() {
					e.Tracer.Faults.Remove(added.ID)
					_ = e.AdminClient().AppsV1().Deployments("default").Delete(ctx, name, metav1.DeleteOptions{})
				})
				_, _ = a.Apply(ctx, []byte(deploymentYAML(name, 1)), name) // API-stage variants fail the apply itself
				want.Stage = id
				waittest.EventuallyEvery(t, "stage event "+want.String(), poll, 15*time.Second, func() (bool, string) {
					return observeName(rec, name, want), lastProblem(rec.Events())
				})
			})
		}
	}
}
