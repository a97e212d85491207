package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/engine/enginetest"
)

func TestApplyCreatesThenMerges(t *testing.T) {
	env := enginetest.Start(t)
	ctx := context.Background()
	a, err := New(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: nginx:1.27\n"
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  password: hunter2\n"
	res, err := a.Apply(ctx, []byte(pod+"---\n"+secret), "m.yaml")
	if err != nil || len(res) != 2 || res[0].String() != "pod/p created" || res[1].String() != "secret/s created" {
		t.Fatalf("first apply: %v %v", res, err)
	}
	// The server has bound the pod; applying a new image must not fight over spec.nodeName.
	p, _ := env.Admin().CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	if err := env.Admin().CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err = a.Apply(ctx, []byte(strings.Replace(pod, "nginx:1.27", "nginx:1.28", 1)), "m.yaml")
	if err != nil || res[0].Action != "configured" {
		t.Fatalf("second apply: %v %v", res, err)
	}
	p2, _ := env.Admin().CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	if p2.Spec.Containers[0].Image != "nginx:1.28" || p2.Spec.NodeName != "node-1" || p2.UID != p.UID {
		t.Fatalf("after apply: image %s node %q", p2.Spec.Containers[0].Image, p2.Spec.NodeName)
	}
	if res, err = a.Apply(ctx, []byte(strings.Replace(pod, "nginx:1.27", "nginx:1.28", 1)), "m.yaml"); err != nil || res[0].Action != "unchanged" {
		t.Fatalf("third apply: %v %v", res, err)
	}
	s, _ := env.Admin().CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
	if string(s.Data["password"]) != "hunter2" || len(s.StringData) != 0 {
		t.Fatalf("stringData not folded into data: %+v", s)
	}
}

func TestApplyRemovesWhatTheManifestDropped(t *testing.T) {
	env := enginetest.Start(t)
	ctx := context.Background()
	a, err := New(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  keep: \"1\"\n  drop: \"2\"\n"
	if _, err := a.Apply(ctx, []byte(cm), "c.yaml"); err != nil {
		t.Fatal(err)
	}
	// Another client's change to a field the manifest never set survives.
	if _, err := env.Admin().CoreV1().ConfigMaps("default").Patch(ctx, "c", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"team":"web"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, []byte(strings.Replace(cm, "  drop: \"2\"\n", "", 1)), "c.yaml"); err != nil {
		t.Fatal(err)
	}
	got, _ := env.Admin().CoreV1().ConfigMaps("default").Get(ctx, "c", metav1.GetOptions{})
	if _, ok := got.Data["drop"]; ok || got.Data["keep"] != "1" || got.Labels["team"] != "web" {
		t.Fatalf("after the second apply: data %v labels %v", got.Data, got.Labels)
	}
}

func TestApplyLeavesOutUnservedKinds(t *testing.T) {
	env := enginetest.Start(t)
	a, err := New(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n" +
		"---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\nspec:\n  defaultBackend:\n    service: {name: web, port: {number: 80}}\n"
	res, err := a.Apply(context.Background(), []byte(manifest), "f.yaml")
	var unserved *UnservedError
	if !errors.As(err, &unserved) || len(unserved.Errors) != 1 {
		t.Fatalf("error %v, want one unserved kind", err)
	}
	want := `resource mapping not found for name: "w" namespace: "" from "f.yaml": no matches for kind "Widget" in version "example.com/v1"` +
		"; ensure CRDs are installed first"
	if unserved.Errors[0].Error() != want {
		t.Errorf("got %q, want %q", unserved.Errors[0], want)
	}
	if len(res) != 2 || res[0].String() != "configmap/a created" || res[1].String() != "ingress.networking.k8s.io/web created" {
		t.Errorf("results %v, want the ConfigMap and the Ingress created", res)
	}
}
