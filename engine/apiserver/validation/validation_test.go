package validation

import (
	"strings"
	"testing"

	"github.com/podtrace/podtrace/engine/apiserver/defaults"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func pod(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
	}
	if mutate != nil {
		mutate(p)
	}
	defaults.Default(p)
	return p
}

func deployment(mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
			},
		},
	}
	if mutate != nil {
		mutate(d)
	}
	defaults.Default(d)
	return d
}

func TestValidateCreate(t *testing.T) {
	neg := int32(-1)
	tests := []struct {
		name string
		obj  runtime.Object
		gk   schema.GroupKind
		want string // the full apierrors.NewInvalid message; "" means valid
	}{
		{"valid pod", pod(nil), corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), ""},
		{"no containers", pod(func(p *corev1.Pod) { p.Spec.Containers = nil }), schema.GroupKind{Kind: "Pod"},
			`Pod "web" is invalid: spec.containers: Required value`},
		{"container without name and image", pod(func(p *corev1.Pod) { p.Spec.Containers[0] = corev1.Container{} }), schema.GroupKind{Kind: "Pod"},
			`Pod "web" is invalid: [spec.containers[0].name: Required value, spec.containers[0].image: Required value]`},
		{"bad pod name", pod(func(p *corev1.Pod) { p.Name = "Web_1" }), schema.GroupKind{Kind: "Pod"},
			`Pod "Web_1" is invalid: metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"bad restartPolicy", pod(func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }), schema.GroupKind{Kind: "Pod"},
			`Pod "web" is invalid: spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`},
		{"request above limit", pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}
		}), schema.GroupKind{Kind: "Pod"},
			`Pod "web" is invalid: spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`},
		{"negative memory", pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Mi")}
		}), schema.GroupKind{Kind: "Pod"},
			`Pod "web" is invalid: spec.containers[0].resources.requests[memory]: Invalid value: "-1Mi": must be greater than or equal to 0`},
		{"mount of unknown volume", pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}), schema.GroupKind{Kind: "Pod"},
			`Pod "web" is invalid: spec.containers[0].volumeMounts[0].name: Not found: "data"`},
		{"duplicate container names", pod(func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "nginx", Image: "nginx"})
		}), schema.GroupKind{Kind: "Pod"},
			`Pod "web" is invalid: spec.containers[1].name: Duplicate value: "nginx"`},
		{"valid deployment", deployment(nil), schema.GroupKind{Group: "apps", Kind: "Deployment"}, ""},
		{"selector does not match", deployment(func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "api"} }),
			schema.GroupKind{Group: "apps", Kind: "Deployment"},
			"Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels`"},
		{"negative replicas", deployment(func(d *appsv1.Deployment) { d.Spec.Replicas = &neg }),
			schema.GroupKind{Group: "apps", Kind: "Deployment"},
			`Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
		{"template restartPolicy Never", deployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }),
			schema.GroupKind{Group: "apps", Kind: "Deployment"},
			`Deployment.apps "web" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`},
		{"missing selector", deployment(func(d *appsv1.Deployment) { d.Spec.Selector = nil }),
			schema.GroupKind{Group: "apps", Kind: "Deployment"},
			// upstream also reports the template mismatch: a nil selector matches nothing
			"Deployment.apps \"web\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`]"},
		{"namespace name not a label", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team.a"}}, schema.GroupKind{Kind: "Namespace"},
			`Namespace "team.a" is invalid: metadata.name: Invalid value: "team.a": must not contain dots`},
		{"namespace name uppercase", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "Team"}}, schema.GroupKind{Kind: "Namespace"},
			`Namespace "Team" is invalid: metadata.name: Invalid value: "Team": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"configmap bad key", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"a b": "x"}},
			schema.GroupKind{Kind: "ConfigMap"},
			`ConfigMap "cfg" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
		{"rolebinding bad kind", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rb", Namespace: "default"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "User", Name: "x"}},
			schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"},
			`RoleBinding.rbac.authorization.k8s.io "rb" is invalid: roleRef.kind: Unsupported value: "User": supported values: "Role", "ClusterRole"`},
		{"role without verbs", &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}},
			schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"},
			`Role.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: verbs must contain at least one value`},
		{"pod namespace missing", pod(func(p *corev1.Pod) { p.Namespace = "" }), schema.GroupKind{Kind: "Pod"},
			`Pod "web" is invalid: metadata.namespace: Required value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateCreate(tt.obj)
			if tt.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors: %v", errs.ToAggregate())
				}
				return
			}
			name := tt.obj.(metav1.Object).GetName()
			got := apierrors.NewInvalid(tt.gk, name, errs).Error()
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestValidatePodUpdate(t *testing.T) {
	old := pod(nil)
	old.ResourceVersion = "5"

	image := old.DeepCopy()
	image.Spec.Containers[0].Image = "nginx:1.28"
	if errs := ValidateUpdate(image, old); len(errs) != 0 {
		t.Errorf("image update rejected: %v", errs.ToAggregate())
	}

	added := old.DeepCopy()
	added.Spec.Tolerations = append(added.Spec.Tolerations, corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists})
	if errs := ValidateUpdate(added, old); len(errs) != 0 {
		t.Errorf("toleration addition rejected: %v", errs.ToAggregate())
	}

	changed := old.DeepCopy()
	changed.Spec.RestartPolicy = corev1.RestartPolicyNever
	errs := ValidateUpdate(changed, old)
	if len(errs) != 1 || errs[0].Field != "spec" {
		t.Fatalf("want one error on spec, got %v", errs)
	}
	prefix := "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
	if got := errs[0].Error(); !strings.HasPrefix(got, prefix) || !strings.Contains(got, `"Never"`) {
		t.Errorf("got %q\nwant prefix %q and a diff naming Never", got, prefix)
	}

	more := old.DeepCopy()
	more.Spec.Containers = append(more.Spec.Containers, corev1.Container{Name: "b", Image: "b"})
	defaults.Default(more)
	errs = ValidateUpdate(more, old)
	if got := errs.ToAggregate().Error(); !strings.Contains(got, "spec.containers: Forbidden: pod updates may not add or remove containers") {
		t.Errorf("got %s", got)
	}

	renamed := old.DeepCopy()
	renamed.Name = "other"
	errs = ValidateUpdate(renamed, old)
	if got := errs.ToAggregate().Error(); !strings.Contains(got, "metadata.name: Invalid value: \"other\": field is immutable") {
		t.Errorf("got %s", got)
	}
}

func TestValidateDeploymentUpdateSelectorImmutable(t *testing.T) {
	old := deployment(nil)
	old.ResourceVersion = "7"
	upd := old.DeepCopy()
	upd.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "x"}}
	upd.Spec.Template.Labels = map[string]string{"app": "web", "tier": "x"}
	errs := ValidateUpdate(upd, old)
	if len(errs) != 1 || errs[0].Field != "spec.selector" || !strings.Contains(errs[0].Error(), "field is immutable") {
		t.Errorf("got %v", errs)
	}
}

func TestValidateImmutableConfigMapAndSecret(t *testing.T) {
	yes := true
	oldCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default", ResourceVersion: "3"},
		Immutable: &yes, Data: map[string]string{"a": "1"}}
	newCM := oldCM.DeepCopy()
	newCM.Data["a"] = "2"
	got := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cfg", ValidateUpdate(newCM, oldCM)).Error()
	if want := "ConfigMap \"cfg\" is invalid: data: Forbidden: field is immutable when `immutable` is set"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	oldS := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", ResourceVersion: "3"}, Type: corev1.SecretTypeOpaque}
	newS := oldS.DeepCopy()
	newS.Type = corev1.SecretTypeBasicAuth
	newS.Data = map[string][]byte{"username": []byte("u")}
	got = apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s", ValidateUpdate(newS, oldS)).Error()
	if want := `Secret "s" is invalid: type: Invalid value: "kubernetes.io/basic-auth": field is immutable`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
