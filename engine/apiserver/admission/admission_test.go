package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/engine/apiserver/defaults"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	podGVK = corev1.SchemeGroupVersion.WithKind("Pod")
	podGVR = corev1.SchemeGroupVersion.WithResource("pods")
	nsGVK  = corev1.SchemeGroupVersion.WithKind("Namespace")
	nsGVR  = corev1.SchemeGroupVersion.WithResource("namespaces")
)

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func serviceAccount(ns, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func newPod(ns, name string, cpu string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	defaults.Default(p)
	return p
}

func createPod(p *corev1.Pod) *Attributes {
	return &Attributes{Operation: Create, Kind: podGVK, Resource: podGVR, Namespace: p.Namespace, Name: p.Name, Object: p,
		User: User{Name: "kubernetes-admin", Groups: []string{"system:masters"}}}
}

func TestChainDefaultOrderAndPluginNames(t *testing.T) {
	c := New(newMemStore(nil))
	got := strings.Join(c.Plugins(), " ")
	want := "mutating/NamespaceLifecycle mutating/LimitRanger mutating/ServiceAccount mutating/DefaultTolerationSeconds " +
		"validating/LimitRanger validating/ServiceAccount validating/ResourceQuota"
	if got != want {
		t.Errorf("plugins = %s\nwant      %s", got, want)
	}
}

// denyAll is a stand-in for a denying webhook, built from a function field.
type denyAll struct{ validate func(*Attributes) error }

func (denyAll) Name() string { return "DenyAll" }
func (d denyAll) Validate(_ context.Context, a *Attributes) error {
	return d.validate(a)
}

func TestChainReportsRejectingPlugin(t *testing.T) {
	store := newMemStore(map[string][]runtime.Object{
		"namespaces":      {namespace("default", corev1.NamespaceActive)},
		"serviceaccounts": {serviceAccount("default", "default")},
	})
	c := New(store)
	c.AddValidator(denyAll{validate: func(a *Attributes) error {
		return NewForbidden(a, fmt.Errorf("denied by policy"))
	}})
	err := c.Admit(context.Background(), createPod(newPod("default", "web", "")))
	if RejectedBy(err) != "DenyAll" {
		t.Fatalf("RejectedBy = %q (err %v), want DenyAll", RejectedBy(err), err)
	}
	if !apierrors.IsForbidden(err) || err.Error() != `pods "web" is forbidden: denied by policy` {
		t.Errorf("err = %v, want 403 with the plugin's message", err)
	}
	var rej *Rejection
	if !errors.As(err, &rej) || rej.Phase != Validating || rej.Status().Code != 403 {
		t.Errorf("rejection = %+v", rej)
	}
}

func TestChainMutatesPod(t *testing.T) {
	store := newMemStore(map[string][]runtime.Object{
		"namespaces":      {namespace("default", corev1.NamespaceActive)},
		"serviceaccounts": {serviceAccount("default", "default")},
	})
	c := New(store)
	pod := newPod("default", "web", "")
	if err := c.Admit(context.Background(), createPod(pod)); err != nil {
		t.Fatalf("Admit: %v", err)
	}
	if pod.Spec.ServiceAccountName != "default" {
		t.Errorf("serviceAccountName = %q, want default", pod.Spec.ServiceAccountName)
	}
	if len(pod.Spec.Volumes) != 1 || !strings.HasPrefix(pod.Spec.Volumes[0].Name, "kube-api-access-") || len(pod.Spec.Volumes[0].Name) != len("kube-api-access-")+5 {
		t.Fatalf("volumes = %+v, want one kube-api-access-xxxxx", pod.Spec.Volumes)
	}
	src := pod.Spec.Volumes[0].Projected
	if src == nil || len(src.Sources) != 3 || *src.Sources[0].ServiceAccountToken.ExpirationSeconds != 3607 ||
		src.Sources[1].ConfigMap.Name != "kube-root-ca.crt" || src.Sources[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("projected source = %+v", src)
	}
	m := pod.Spec.Containers[0].VolumeMounts
	if len(m) != 1 || m[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" || !m[0].ReadOnly || m[0].Name != pod.Spec.Volumes[0].Name {
		t.Errorf("volumeMounts = %+v", m)
	}
	var keys []string
	for _, tol := range pod.Spec.Tolerations {
		keys = append(keys, fmt.Sprintf("%s:%s:%s:%d", tol.Key, tol.Operator, tol.Effect, *tol.TolerationSeconds))
	}
	want := "node.kubernetes.io/not-ready:Exists:NoExecute:300 node.kubernetes.io/unreachable:Exists:NoExecute:300"
	if strings.Join(keys, " ") != want {
		t.Errorf("tolerations = %v, want %s", keys, want)
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	store := newMemStore(map[string][]runtime.Object{
		"namespaces": {namespace("default", corev1.NamespaceActive), namespace("leaving", corev1.NamespaceTerminating)},
	})
	l := NewNamespaceLifecycle(store)
	tests := []struct {
		name    string
		attrs   *Attributes
		want    string
		reason  metav1.StatusReason
		wantNil bool
	}{
		{name: "missing namespace", attrs: createPod(newPod("nope", "web", "")),
			want: `namespaces "nope" not found`, reason: metav1.StatusReasonNotFound},
		{name: "terminating namespace", attrs: createPod(newPod("leaving", "web", "")),
			want: `pods "web" is forbidden: unable to create new content in namespace leaving because it is being terminated`, reason: metav1.StatusReasonForbidden},
		{name: "active namespace", attrs: createPod(newPod("default", "web", "")), wantNil: true},
		{name: "delete in terminating namespace", attrs: &Attributes{Operation: Delete, Kind: podGVK, Resource: podGVR, Namespace: "leaving", Name: "web"}, wantNil: true},
		{name: "delete default", attrs: &Attributes{Operation: Delete, Kind: nsGVK, Resource: nsGVR, Name: "default"},
			want: `namespaces "default" is forbidden: this namespace may not be deleted`, reason: metav1.StatusReasonForbidden},
		{name: "delete kube-system", attrs: &Attributes{Operation: Delete, Kind: nsGVK, Resource: nsGVR, Name: "kube-system"},
			want: `namespaces "kube-system" is forbidden: this namespace may not be deleted`, reason: metav1.StatusReasonForbidden},
		{name: "delete ordinary namespace", attrs: &Attributes{Operation: Delete, Kind: nsGVK, Resource: nsGVR, Name: "leaving"}, wantNil: true},
		{name: "create namespace", attrs: &Attributes{Operation: Create, Kind: nsGVK, Resource: nsGVR, Name: "new", Object: namespace("new", "")}, wantNil: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := l.Admit(context.Background(), tt.attrs)
			if tt.wantNil {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want || apierrors.ReasonForError(err) != tt.reason {
				t.Fatalf("err = %v (%s), want %q (%s)", err, apierrors.ReasonForError(err), tt.want, tt.reason)
			}
		})
	}
	err := l.Admit(context.Background(), createPod(newPod("leaving", "web", "")))
	var se *apierrors.StatusError
	if !errors.As(err, &se) || len(se.ErrStatus.Details.Causes) != 1 || se.ErrStatus.Details.Causes[0].Type != "NamespaceTerminating" {
		t.Errorf("terminating cause missing: %+v", se)
	}
}

func TestServiceAccountMissing(t *testing.T) {
	store := newMemStore(nil)
	sa := NewServiceAccount(store)
	lookups := 0
	sa.Interval = func() time.Duration { lookups++; return time.Millisecond }

	pod := newPod("default", "web", "")
	err := sa.Admit(context.Background(), createPod(pod))
	want := `pods "web" is forbidden: error looking up service account default/default: serviceaccount "default" not found`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if lookups != 9 {
		t.Errorf("waited %d times for the default account, want 9 (10 attempts)", lookups)
	}

	lookups = 0
	pod = newPod("default", "web", "")
	pod.Spec.ServiceAccountName = "builder"
	err = sa.Admit(context.Background(), createPod(pod))
	if err == nil || !strings.HasSuffix(err.Error(), `error looking up service account default/builder: serviceaccount "builder" not found`) || lookups != 0 {
		t.Errorf("err = %v, waits %d", err, lookups)
	}
}

func TestServiceAccountRespectsAutomountAndExistingMount(t *testing.T) {
	no := false
	acct := serviceAccount("default", "default")
	acct.AutomountServiceAccountToken = &no
	acct.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	sa := NewServiceAccount(newMemStore(map[string][]runtime.Object{"serviceaccounts": {acct}}))
	pod := newPod("default", "web", "")
	if err := sa.Admit(context.Background(), createPod(pod)); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Volumes) != 0 || len(pod.Spec.Containers[0].VolumeMounts) != 0 {
		t.Errorf("token mounted although automount is false: %+v", pod.Spec.Volumes)
	}
	if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("imagePullSecrets = %+v", pod.Spec.ImagePullSecrets)
	}
}

func TestDefaultTolerationSecondsKeepsExisting(t *testing.T) {
	pod := newPod("default", "web", "")
	pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	if err := NewDefaultTolerationSeconds().Admit(context.Background(), createPod(pod)); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Tolerations) != 1 {
		t.Errorf("tolerations = %+v, want the tolerate-everything one only", pod.Spec.Tolerations)
	}
}
