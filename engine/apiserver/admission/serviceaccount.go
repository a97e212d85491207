package admission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

const (
	// DefaultServiceAccountName is the service account pods get when they
	// name none.
	DefaultServiceAccountName = "default"
	// ServiceAccountVolumeName is the prefix of the projected token volume.
	ServiceAccountVolumeName = "kube-api-access"
	// DefaultAPITokenMountPath is where every container gets the token.
	DefaultAPITokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenExpirationSeconds is upstream's WarnOnlyBoundTokenExpirationSeconds.
	tokenExpirationSeconds = 60*60 + 7
)

// ServiceAccount defaults spec.serviceAccountName, requires the service
// account to exist, mounts the kube-api-access-xxxxx projected token volume
// into every container and copies the account's imagePullSecrets, as
// upstream's ServiceAccount plugin does on pod create.
type ServiceAccount struct {
	store Store
	// Attempts is how often a missing "default" account is looked up before
	// giving up (upstream: 10, since the controller creates it shortly after
	// the namespace); other accounts are looked up once.
	Attempts int
	// Interval returns the wait between attempts (upstream: 100–200 ms).
	Interval func() time.Duration
	// GenerateName returns a name for the token volume from its prefix.
	GenerateName func(prefix string) string
}

// NewServiceAccount returns the plugin with upstream's retry behaviour.
func NewServiceAccount(store Store) *ServiceAccount {
	return &ServiceAccount{
		store:    store,
		Attempts: 10,
		Interval: func() time.Duration { return time.Duration(100+rand.Int64N(100)) * time.Millisecond },
		GenerateName: func(prefix string) string {
			return prefix + utilrand.String(5)
		},
	}
}

// Name returns "ServiceAccount".
func (*ServiceAccount) Name() string { return "ServiceAccount" }

func (s *ServiceAccount) podCreate(a *Attributes) (*corev1.Pod, bool) {
	if !isPod(a) || a.Operation != Create {
		return nil, false
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil, false
	}
	_, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return pod, !mirror
}

// Admit sets the account, mounts its token and copies pull secrets.
func (s *ServiceAccount) Admit(ctx context.Context, a *Attributes) error {
	pod, ok := s.podCreate(a)
	if !ok {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
	}
	sa, err := s.get(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		s.mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, ref := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets[i].Name = ref.Name
		}
	}
	return nil
}

// Validate requires a service account that exists.
func (s *ServiceAccount) Validate(ctx context.Context, a *Attributes) error {
	pod, ok := s.podCreate(a)
	if !ok {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		return NewForbidden(a, fmt.Errorf("no service account specified for pod %s/%s", a.Namespace, pod.Name))
	}
	if _, err := s.get(ctx, a.Namespace, pod.Spec.ServiceAccountName); err != nil {
		return NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %v", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	return nil
}

func (s *ServiceAccount) get(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	attempts := 1
	if name == DefaultServiceAccountName && s.Attempts > 1 {
		attempts = s.Attempts
	}
	for i := 0; i < attempts; i++ {
		if i > 0 {
			t := time.NewTimer(s.Interval())
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		obj, err := s.store.Get(ctx, "serviceaccounts", namespace, name)
		if err == nil {
			sa, ok := obj.(*corev1.ServiceAccount)
			if !ok {
				return nil, fmt.Errorf("service account lookup returned %T", obj)
			}
			return sa, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, name)
}

func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

func (s *ServiceAccount) mountToken(pod *corev1.Pod) {
	volName := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, ServiceAccountVolumeName+"-") {
			volName = v.Name
			break
		}
	}
	hasVolume := volName != ""
	if !hasVolume {
		volName = s.GenerateName(ServiceAccountVolumeName + "-")
	}
	mount := corev1.VolumeMount{Name: volName, ReadOnly: true, MountPath: DefaultAPITokenMountPath}
	needs := false
	add := func(cs []corev1.Container) {
		for i := range cs {
			mounted := false
			for _, m := range cs[i].VolumeMounts {
				if m.MountPath == DefaultAPITokenMountPath {
					mounted = true
					break
				}
			}
			if !mounted {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needs = true
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	if !hasVolume && needs {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         volName,
			VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()},
		})
	}
}

// TokenVolumeSource is the projected volume upstream mounts: the bound
// token, the cluster CA from kube-root-ca.crt and the namespace.
func TokenVolumeSource() *corev1.ProjectedVolumeSource {
	mode := corev1.ProjectedVolumeSourceDefaultMode
	exp := int64(tokenExpirationSeconds)
	return &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path:     "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}
}
