package apiserver_test

import (
	"context"
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/engine/enginetest"
)

func deploymentApply(name, image string, replicas int32) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"app": name}
	return appsv1ac.Deployment(name, "default").
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("app").WithImage(image)))))
}

// applyRaw sends a server-side apply patch and returns the status code.
func applyRaw(t *testing.T, c kubernetes.Interface, path string, params map[string]string, body string) (int, error) {
	t.Helper()
	req := c.AppsV1().RESTClient().Patch(types.ApplyYAMLPatchType).AbsPath(path).Body([]byte(body))
	for k, v := range params {
		req = req.Param(k, v)
	}
	var code int
	err := req.Do(context.Background()).StatusCode(&code).Error()
	return code, err
}

func managers(m metav1.Object) map[string]string {
	out := map[string]string{}
	for _, e := range m.GetManagedFields() {
		key := e.Manager
		if e.Subresource != "" {
			key += "/" + e.Subresource
		}
		out[key] = string(e.Operation)
	}
	return out
}

const deployPath = "/apis/apps/v1/namespaces/default/deployments/"

func TestServerSideApplyCreatesUpdatesAndConflicts(t *testing.T) {
	env := enginetest.Start(t)
	ctx := context.Background()
	c := env.Admin()
	deploys := c.AppsV1().Deployments("default")

	// Apply creates (201), owned by the manager.
	yaml := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: web}\n" +
		"  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.27\n"
	code, err := applyRaw(t, c, deployPath+"web", map[string]string{"fieldManager": "alice"}, yaml)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("apply create: %d %v", code, err)
	}
	d, err := deploys.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(d); len(got) != 1 || got["alice"] != "Apply" {
		t.Fatalf("managers after create: %v", got)
	}
	if d.UID == "" || d.Generation != 1 || d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("created object lacks server fields or defaults: %+v", d.ObjectMeta)
	}

	// Applying again with a new image configures it (200, generation 2).
	d, err = deploys.Apply(ctx, deploymentApply("web", "nginx:1.28", 2), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" || d.Generation != 2 {
		t.Fatalf("apply update: image %s generation %d", d.Spec.Template.Spec.Containers[0].Image, d.Generation)
	}

	// A second manager taking .spec.replicas conflicts, in upstream's words.
	bob := appsv1ac.Deployment("web", "default").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(5))
	_, err = deploys.Apply(ctx, bob, metav1.ApplyOptions{FieldManager: "bob"})
	if !apierrors.IsConflict(err) || err.Error() != `Apply failed with 1 conflict: conflict with "alice": .spec.replicas` {
		t.Fatalf("conflicting apply: %v", err)
	}
	st := err.(apierrors.APIStatus).Status()
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != ".spec.replicas" ||
		st.Details.Causes[0].Type != metav1.CauseTypeFieldManagerConflict || st.Details.Causes[0].Message != `conflict with "alice"` {
		t.Fatalf("conflict details: %+v", st.Details)
	}
	// Forced, bob takes the field.
	d, err = deploys.Apply(ctx, bob, metav1.ApplyOptions{FieldManager: "bob", Force: true})
	if err != nil || *d.Spec.Replicas != 5 {
		t.Fatalf("forced apply: %v", err)
	}
	if got := managers(d); got["alice"] != "Apply" || got["bob"] != "Apply" {
		t.Fatalf("managers after force: %v", got)
	}
	// alice no longer owns replicas: re-applying her old config (replicas 2)
	// now conflicts with bob.
	_, err = deploys.Apply(ctx, deploymentApply("web", "nginx:1.28", 2), metav1.ApplyOptions{FieldManager: "alice"})
	if !apierrors.IsConflict(err) || err.Error() != `Apply failed with 1 conflict: conflict with "bob": .spec.replicas` {
		t.Fatalf("alice after bob's force: %v", err)
	}

	// An ordinary update of an applied object is recorded (Update, with the
	// manager's API version and time), so a later apply sees it.
	d.Spec.Replicas = ptr(int32(7))
	d, err = deploys.Update(ctx, d, metav1.UpdateOptions{FieldManager: "scaler"})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(d); got["scaler"] != "Update" {
		t.Fatalf("managers after update: %v", got)
	}
	_, err = deploys.Apply(ctx, bob, metav1.ApplyOptions{FieldManager: "bob"})
	if !apierrors.IsConflict(err) || err.Error() != `Apply failed with 1 conflict: conflict with "scaler" using apps/v1: .spec.replicas` {
		t.Fatalf("apply after update: %v", err)
	}

	// Status writes are recorded against the status subresource.
	d.Status.ObservedGeneration = d.Generation
	d.Status.Replicas = 7
	d, err = c.AppsV1().Deployments("default").UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(d); got["podtrace/status"] != "Update" {
		t.Fatalf("managers after status update (user agent as manager): %v", got)
	}
	// A strategic merge patch too, by user agent when no fieldManager is given.
	d, err = deploys.Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"tier":"web"}}}`), metav1.PatchOptions{})
	if err != nil || d.Labels["tier"] != "web" {
		t.Fatalf("patch: %v", err)
	}
	if got := managers(d); got["podtrace"] != "Update" {
		t.Fatalf("managers after patch: %v", got)
	}
}

func TestServerSideApplyStatusDryRunAndErrors(t *testing.T) {
	env := enginetest.Start(t)
	ctx := context.Background()
	c := env.Admin()
	deploys := c.AppsV1().Deployments("default")

	// fieldManager is required: upstream's 422 on PatchOptions.
	code, err := applyRaw(t, c, deployPath+"x", nil, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")
	if code != http.StatusUnprocessableEntity ||
		err.Error() != `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch` {
		t.Fatalf("no fieldManager: %d %v", code, err)
	}
	// Wrong kind or version: the field manager's 400s.
	if code, err := applyRaw(t, c, deployPath+"x", map[string]string{"fieldManager": "m"},
		"apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: x}\n"); code != http.StatusBadRequest ||
		err.Error() != "invalid object type: apps/v1, Kind=ReplicaSet" {
		t.Fatalf("wrong kind: %d %v", code, err)
	}
	// Name mismatch.
	if code, err := applyRaw(t, c, deployPath+"x", map[string]string{"fieldManager": "m"},
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: other}\n"); code != http.StatusBadRequest ||
		err.Error() != "the name of the object (other) does not match the name on the URL (x)" {
		t.Fatalf("name mismatch: %d %v", code, err)
	}
	// Duplicate fields: a warning by default, a 400 with fieldValidation=Strict.
	dup := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dup}\ndata: {k: a}\ndata: {k: b}\n"
	if code, err := applyRaw(t, c, "/api/v1/namespaces/default/configmaps/dup", map[string]string{"fieldManager": "m", "fieldValidation": "Strict"}, dup); code != http.StatusBadRequest ||
		err.Error() != `error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:
  line 5: key "data" already set in map` {
		t.Fatalf("duplicate field, Strict: %d %v", code, err)
	}
	if code, err := applyRaw(t, c, "/api/v1/namespaces/default/configmaps/dup", map[string]string{"fieldManager": "m"}, dup); code != http.StatusCreated || err != nil {
		t.Fatalf("duplicate field, Warn: %d %v", code, err)
	}
	// Dry run: answered, not stored.
	d, err := deploys.Apply(ctx, deploymentApply("dry", "nginx", 1), metav1.ApplyOptions{FieldManager: "m", DryRun: []string{metav1.DryRunAll}})
	if err != nil || d.Name != "dry" {
		t.Fatalf("dry-run apply: %v", err)
	}
	if _, err := deploys.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry-run apply stored the object: %v", err)
	}
	// The status subresource does not create.
	st := appsv1ac.Deployment("nope", "default").WithStatus(appsv1ac.DeploymentStatus().WithReplicas(1))
	if _, err := deploys.ApplyStatus(ctx, st, metav1.ApplyOptions{FieldManager: "m"}); !apierrors.IsNotFound(err) {
		t.Fatalf("status apply of a missing object: %v", err)
	}

	// An object created without apply carries no managedFields, even after updates.
	plain := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "plain"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "plain"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}}}
	created, err := deploys.Create(ctx, plain, metav1.CreateOptions{})
	if err != nil || created.ManagedFields != nil {
		t.Fatalf("plain create: %v %v", err, created.ManagedFields)
	}
	created.Spec.Replicas = ptr(int32(2))
	if u, err := deploys.Update(ctx, created, metav1.UpdateOptions{}); err != nil || u.ManagedFields != nil {
		t.Fatalf("plain update: %v %v", err, u.ManagedFields)
	}
	// Its first apply hands the existing fields to before-first-apply, as upstream.
	_, err = deploys.Apply(ctx, deploymentApply("plain", "nginx", 3), metav1.ApplyOptions{FieldManager: "m"})
	if !apierrors.IsConflict(err) || err.Error() != `Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas` {
		t.Fatalf("first apply of a plain object: %v", err)
	}

	// Status apply on an applied object: spec in the configuration is reset,
	// status is set and owned by the status manager.
	if _, err := deploys.Apply(ctx, deploymentApply("web", "nginx", 1), metav1.ApplyOptions{FieldManager: "m"}); err != nil {
		t.Fatal(err)
	}
	st = appsv1ac.Deployment("web", "default").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(9)).
		WithStatus(appsv1ac.DeploymentStatus().WithReplicas(1))
	d, err = deploys.ApplyStatus(ctx, st, metav1.ApplyOptions{FieldManager: "ctl", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 1 || d.Status.Replicas != 1 || managers(d)["ctl/status"] != "Apply" {
		t.Fatalf("status apply: replicas %d status %d managers %v", *d.Spec.Replicas, d.Status.Replicas, managers(d))
	}
	// A stale resourceVersion in the configuration is a precondition failure.
	stale := deploymentApply("web", "nginx", 1).WithResourceVersion("1")
	if _, err := deploys.Apply(ctx, stale, metav1.ApplyOptions{FieldManager: "m"}); !apierrors.IsConflict(err) ||
		err.Error() != `Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your changes to the latest version and try again` {
		t.Fatalf("stale resourceVersion: %v", err)
	}
	// Apply works on every served resource, e.g. a ConfigMap, and on
	// cluster-scoped ones, where the server keeps what it owns (status).
	cm := corev1ac.ConfigMap("cfg", "default").WithData(map[string]string{"k": "v"})
	got, err := c.CoreV1().ConfigMaps("default").Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "m"})
	if err != nil || got.Data["k"] != "v" || managers(got)["m"] != "Apply" {
		t.Fatalf("configmap apply: %v", err)
	}
	ns, err := c.CoreV1().Namespaces().Apply(ctx, corev1ac.Namespace("team").WithLabels(map[string]string{"a": "b"}),
		metav1.ApplyOptions{FieldManager: "m"})
	if err != nil || ns.Labels["a"] != "b" || ns.Status.Phase != corev1.NamespaceActive || managers(ns)["m"] != "Apply" {
		t.Fatalf("namespace apply: %v %+v", err, ns)
	}
	// An unknown field is the field manager's error, as kube-apiserver answers it.
	code, err = applyRaw(t, c, "/api/v1/namespaces/default/configmaps/cfg", map[string]string{"fieldManager": "m"},
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: default}\nbogus: 1\n")
	if code != http.StatusInternalServerError || apierrors.ReasonForError(err) != "" ||
		err.Error() != "failed to create typed patch object (default/cfg; /v1, Kind=ConfigMap): .bogus: field not declared in schema" {
		t.Fatalf("unknown field: %d %q %v", code, apierrors.ReasonForError(err), err)
	}
}

func ptr[T any](v T) *T { return &v }
