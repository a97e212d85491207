package kubectle2e

import (
	"strings"
	"testing"

	"github.com/podtrace/podtrace/internal/waittest"
)

// TestServerSideApply drives `kubectl apply --server-side` as a user would:
// apply creates, a changed manifest configures, a second field manager
// taking .spec.replicas conflicts until --force-conflicts, and
// --show-managed-fields shows who owns what.
func TestServerSideApply(t *testing.T) {
	eachKubectl(t, func(t *testing.T, _ *cluster, k *kubectl, suffix string) {
		testServerSideApply(t, k, "ssa-"+suffix)
		testClientToServerSideApply(t, k, "csa-"+suffix)
	})
}

func testServerSideApply(t *testing.T, k *kubectl, name string) {
	f := k.writeFile(name+".yaml", deploymentYAML(name, "nginx:1.27", 2))
	if out := k.ok("apply", "--server-side", "--dry-run=server", "-f", f); out != "deployment.apps/"+name+" serverside-applied (server dry run)\n" {
		t.Fatalf("server dry run = %q", out)
	}
	k.fails("get", "deployment", name)
	if out := k.ok("apply", "--server-side", "-f", f); out != "deployment.apps/"+name+" serverside-applied\n" {
		t.Fatalf("apply --server-side (create) = %q", out)
	}
	if got := k.ok("get", "deployment", name, "-o", "jsonpath={.spec.template.spec.containers[0].image} {.spec.replicas}"); got != "nginx:1.27 2" {
		t.Fatalf("created deployment: %q", got)
	}

	f = k.writeFile(name+".yaml", deploymentYAML(name, "nginx:1.28", 2))
	if out := k.ok("apply", "--server-side", "-f", f); out != "deployment.apps/"+name+" serverside-applied\n" {
		t.Fatalf("apply --server-side (configure) = %q", out)
	}
	if got := k.ok("get", "deployment", name, "-o", "jsonpath={.spec.template.spec.containers[0].image}"); got != "nginx:1.28" {
		t.Fatalf("image after re-apply: %q", got)
	}

	// A second manager wanting other replicas: upstream's conflict, then --force-conflicts.
	scale := k.writeFile(name+"-scale.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: "+name+"\nspec:\n  replicas: 4\n")
	errOut := k.fails("apply", "--server-side", "--field-manager=scaler", "-f", scale)
	if first := strings.SplitN(errOut, "\n", 2)[0]; first != `error: Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas` {
		t.Fatalf("conflicting apply: stderr\n%s", errOut)
	}
	if !strings.Contains(errOut, "--force-conflicts") {
		t.Errorf("kubectl's advice about --force-conflicts is missing:\n%s", errOut)
	}
	if out := k.ok("apply", "--server-side", "--field-manager=scaler", "--force-conflicts", "-f", scale); out != "deployment.apps/"+name+" serverside-applied\n" {
		t.Fatalf("apply --force-conflicts = %q", out)
	}
	if got := k.ok("get", "deployment", name, "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"); got != "4 nginx:1.28" {
		t.Fatalf("after forced apply: %q", got)
	}

	// managedFields: hidden by default, shown with --show-managed-fields.
	if out := k.ok("get", "deployment", name, "-o", "yaml"); strings.Contains(out, "managedFields") {
		t.Errorf("get -o yaml shows managedFields without --show-managed-fields:\n%s", out)
	}
	out := k.ok("get", "deployment", name, "-o", "yaml", "--show-managed-fields")
	for _, want := range []string{"  managedFields:\n", "    manager: kubectl\n", "    manager: scaler\n", "    operation: Apply\n", "        f:replicas: {}\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("get -o yaml --show-managed-fields lacks %q:\n%s", want, out)
		}
	}
	waittest.EventuallyEvery(t, "the deployment controller's status write recorded in managedFields", poll, waitLong, func() (bool, string) {
		out := k.ok("get", "deployment", name, "-o", "yaml", "--show-managed-fields")
		return strings.Contains(out, "    operation: Update\n") && strings.Contains(out, "    subresource: status\n"), out
	})
}

// testClientToServerSideApply moves an object from client-side to
// server-side apply: the fields the last-applied annotation names do not
// conflict, as upstream's field manager allows for the "kubectl" manager.
func testClientToServerSideApply(t *testing.T, k *kubectl, name string) {
	f := k.writeFile(name+".yaml", deploymentYAML(name, "nginx:1.27", 1))
	if out := k.ok("apply", "-f", f); out != "deployment.apps/"+name+" created\n" {
		t.Fatalf("client-side apply = %q", out)
	}
	f = k.writeFile(name+".yaml", deploymentYAML(name, "nginx:1.28", 3))
	if out := k.ok("apply", "--server-side", "-f", f); out != "deployment.apps/"+name+" serverside-applied\n" {
		t.Fatalf("server-side apply after client-side apply = %q", out)
	}
	if got := k.ok("get", "deployment", name, "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}"); got != "3 nginx:1.28" {
		t.Fatalf("after moving to server-side apply: %q", got)
	}
}
