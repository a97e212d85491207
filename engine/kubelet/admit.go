package kubelet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/engine/kubelet/runtime"
)

// podRequests returns the pod's effective requests: the larger of the sum
// of its containers and its largest init container, plus overhead.
func podRequests(pod *v1.Pod) v1.ResourceList {
	sum := v1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		for n, q := range c.Resources.Requests {
			cur := sum[n]
			cur.Add(q)
			sum[n] = cur
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for n, q := range c.Resources.Requests {
			if cur, ok := sum[n]; !ok || q.Cmp(cur) > 0 {
				sum[n] = q.DeepCopy()
			}
		}
	}
	for n, q := range pod.Spec.Overhead {
		cur := sum[n]
		cur.Add(q)
		sum[n] = cur
	}
	return sum
}

// Admit decides whether a pod fits beside the others, as the kubelet's
// predicate admit handler does. It returns the rejection reason
// (OutOfcpu, OutOfmemory, OutOfpods, ...) and message when it does not.
func Admit(pod *v1.Pod, others []*v1.Pod, allocatable v1.ResourceList) (reason, message string, ok bool) {
	if maxPods, has := allocatable[v1.ResourcePods]; has && int64(len(others))+1 > maxPods.Value() {
		return "OutOfpods", insufficient(v1.ResourcePods, 1, int64(len(others)), maxPods.Value()), false
	}
	req := podRequests(pod)
	used := v1.ResourceList{}
	for _, o := range others {
		for n, q := range podRequests(o) {
			cur := used[n]
			cur.Add(q)
			used[n] = cur
		}
	}
	for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		r, has := req[n]
		if !has || r.IsZero() {
			continue
		}
		capacity, hasCap := allocatable[n]
		if !hasCap {
			continue
		}
		u := used[n]
		if value(n, r)+value(n, u) > value(n, capacity) {
			return "OutOf" + string(n), insufficient(n, value(n, r), value(n, u), value(n, capacity)), false
		}
	}
	return "", "", true
}

func value(n v1.ResourceName, q resource.Quantity) int64 {
	if n == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func insufficient(n v1.ResourceName, requested, used, capacity int64) string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", n, requested, used, capacity)
}

func (k *Kubelet) admit(pod *v1.Pod) (string, string, bool) {
	return Admit(pod, k.activePods(pod.UID), k.cfg.Capacity)
}

// mountVolumes "mounts" the pod's volumes: emptyDir always works; a
// configMap or secret (directly or projected) must exist unless optional.
func (k *Kubelet) mountVolumes(ctx context.Context, pod *v1.Pod) (string, error) {
	var mounted []string
	for _, vol := range pod.Spec.Volumes {
		var err error
		switch {
		case vol.ConfigMap != nil:
			err = k.needConfigMap(ctx, pod.Namespace, vol.ConfigMap.Name, vol.ConfigMap.Optional)
		case vol.Secret != nil:
			err = k.needSecret(ctx, pod.Namespace, vol.Secret.SecretName, vol.Secret.Optional)
		case vol.Projected != nil:
			for _, src := range vol.Projected.Sources {
				switch {
				case src.ConfigMap != nil:
					err = k.needConfigMap(ctx, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Optional)
				case src.Secret != nil:
					err = k.needSecret(ctx, pod.Namespace, src.Secret.Name, src.Secret.Optional)
				}
				if err != nil {
					break
				}
			}
		}
		if err != nil {
			return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
		}
		mounted = append(mounted, vol.Name)
	}
	if len(mounted) == 0 {
		return "no volumes", nil
	}
	return "volumes " + strings.Join(mounted, ", ") + " mounted", nil
}

func (k *Kubelet) needConfigMap(ctx context.Context, ns, name string, optional *bool) error {
	_, err := k.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if optional != nil && *optional {
			return nil
		}
		return fmt.Errorf("configmap %q not found", name)
	}
	return err
}

func (k *Kubelet) needSecret(ctx context.Context, ns, name string, optional *bool) error {
	_, err := k.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if optional != nil && *optional {
			return nil
		}
		return fmt.Errorf("secret %q not found", name)
	}
	return err
}

// pullSecrets reads the pod's imagePullSecrets; missing ones are reported
// with the kubelet's FailedToRetrieveImagePullSecret event.
func (k *Kubelet) pullSecrets(ctx context.Context, pod *v1.Pod, w *podWorker) *runtime.AuthConfig {
	var auth *runtime.AuthConfig
	var failed []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			failed = append(failed, ref.Name)
			continue
		}
		if auth == nil {
			auth = dockerAuth(s)
		}
	}
	if len(failed) > 0 {
		w.podEvent(pod, v1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	return auth
}

// dockerAuth reads the first credential of a dockerconfigjson secret.
func dockerAuth(s *v1.Secret) *runtime.AuthConfig {
	data := s.Data[v1.DockerConfigJsonKey]
	if len(data) == 0 {
		data = s.Data[v1.DockerConfigKey]
	}
	var cfg struct {
		Auths map[string]struct {
			Username, Password, Auth string
		} `json:"auths"`
	}
	if json.Unmarshal(data, &cfg) != nil {
		return &runtime.AuthConfig{Auth: base64.StdEncoding.EncodeToString(data)}
	}
	for _, a := range cfg.Auths {
		return &runtime.AuthConfig{Username: a.Username, Password: a.Password, Auth: a.Auth}
	}
	return nil
}

// resolveEnv builds the container's environment; a missing configMap or
// secret (not optional) is a CreateContainerConfigError.
func (k *Kubelet) resolveEnv(ctx context.Context, pod *v1.Pod, c v1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := k.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && !(from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional) {
				return nil, fmt.Errorf("configmap %q not found", from.ConfigMapRef.Name)
			}
			if err == nil {
				for key, v := range cm.Data {
					env[from.Prefix+key] = v
				}
			}
		case from.SecretRef != nil:
			s, err := k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && !(from.SecretRef.Optional != nil && *from.SecretRef.Optional) {
				return nil, fmt.Errorf("secret %q not found", from.SecretRef.Name)
			}
			if err == nil {
				for key, v := range s.Data {
					env[from.Prefix+key] = string(v)
				}
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil:
			r := e.ValueFrom.ConfigMapKeyRef
			cm, err := k.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
			optional := r.Optional != nil && *r.Optional
			switch {
			case apierrors.IsNotFound(err) && !optional:
				return nil, fmt.Errorf("configmap %q not found", r.Name)
			case err == nil:
				v, ok := cm.Data[r.Key]
				if !ok && !optional {
					return nil, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", r.Key, pod.Namespace, r.Name)
				}
				env[e.Name] = v
			}
		case e.ValueFrom.SecretKeyRef != nil:
			r := e.ValueFrom.SecretKeyRef
			s, err := k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
			optional := r.Optional != nil && *r.Optional
			switch {
			case apierrors.IsNotFound(err) && !optional:
				return nil, fmt.Errorf("secret %q not found", r.Name)
			case err == nil:
				v, ok := s.Data[r.Key]
				if !ok && !optional {
					return nil, fmt.Errorf("couldn't find key %s in Secret %s/%s", r.Key, pod.Namespace, r.Name)
				}
				env[e.Name] = string(v)
			}
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				env[e.Name] = pod.Name
			case "metadata.namespace":
				env[e.Name] = pod.Namespace
			case "spec.nodeName":
				env[e.Name] = pod.Spec.NodeName
			}
		}
	}
	return env, nil
}
