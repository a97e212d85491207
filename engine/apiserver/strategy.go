package apiserver

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// prepareCreate sets what the server owns on a new object, as the
// registries' PrepareForCreate and BeforeCreate do: uid, creation time,
// generation, and a status the client may not choose.
func (s *Server) prepareCreate(res *Resource, obj runtime.Object) {
	m, _ := meta.Accessor(obj)
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(s.cfg.Clock.Now().Truncate(1e9)))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetResourceVersion("")
	m.SetGeneration(1)
	if m.GetNamespace() == "" && !res.Namespaced {
		m.SetNamespace("")
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(&o.Spec)}
	case *appsv1.Deployment:
		o.Status = appsv1.DeploymentStatus{}
	case *appsv1.ReplicaSet:
		o.Status = appsv1.ReplicaSetStatus{}
	case *corev1.Namespace:
		o.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
		if len(o.Spec.Finalizers) == 0 {
			o.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
		}
	case *corev1.ResourceQuota:
		o.Status = corev1.ResourceQuotaStatus{Hard: o.Spec.Hard}
	case *corev1.Service:
		o.Status = corev1.ServiceStatus{}
	case *batchv1.Job:
		o.Status = batchv1.JobStatus{}
		generateJobSelector(o)
	case *corev1.Secret:
		mergeStringData(o)
	}
}

// mergeStringData folds a Secret's write-only stringData into data, as the
// conversion to kube-apiserver's internal type does.
func mergeStringData(s *corev1.Secret) {
	if len(s.StringData) == 0 {
		return
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// prepareUpdate keeps what a main-resource update may not change (status,
// uid, creation time) and bumps generation when the spec changed; for the
// status subresource it keeps everything but status.
func prepareUpdate(obj, old runtime.Object, subresource string) {
	m, _ := meta.Accessor(obj)
	om, _ := meta.Accessor(old)
	m.SetUID(om.GetUID())
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	m.SetDeletionTimestamp(om.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	m.SetGeneration(om.GetGeneration())
	if subresource == "status" {
		keepAllButStatus(obj, old)
		return
	}
	if subresource == "finalize" { // namespaces/finalize changes spec.finalizers only
		ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
		finalizers := ns.Spec.Finalizers
		*ns = *oldNS.DeepCopy()
		ns.Spec.Finalizers = finalizers
		return
	}
	specChanged := false
	switch o := obj.(type) {
	case *corev1.Secret:
		mergeStringData(o)
	case *corev1.Pod:
		o.Status = old.(*corev1.Pod).Status
	case *appsv1.Deployment:
		o.Status = old.(*appsv1.Deployment).Status
		specChanged = !apiequality.Semantic.DeepEqual(o.Spec, old.(*appsv1.Deployment).Spec)
	case *appsv1.ReplicaSet:
		o.Status = old.(*appsv1.ReplicaSet).Status
		specChanged = !apiequality.Semantic.DeepEqual(o.Spec, old.(*appsv1.ReplicaSet).Spec)
	case *corev1.Node:
		o.Status = old.(*corev1.Node).Status
	case *corev1.Namespace:
		o.Status = old.(*corev1.Namespace).Status
	case *corev1.Service:
		o.Status = old.(*corev1.Service).Status
	case *batchv1.Job:
		o.Status = old.(*batchv1.Job).Status
		specChanged = !apiequality.Semantic.DeepEqual(o.Spec, old.(*batchv1.Job).Spec)
	case *discoveryv1.EndpointSlice:
		// the endpointslice strategy: anything but metadata, or the labels, changed
		p := old.(*discoveryv1.EndpointSlice)
		specChanged = o.AddressType != p.AddressType || !apiequality.Semantic.DeepEqual(o.Endpoints, p.Endpoints) ||
			!apiequality.Semantic.DeepEqual(o.Ports, p.Ports) || !apiequality.Semantic.DeepEqual(o.Labels, p.Labels)
	case *corev1.ResourceQuota:
		// status.hard follows spec.hard at once: the quota controller's
		// resync, which podtrace does not run separately.
		o.Status = *old.(*corev1.ResourceQuota).Status.DeepCopy()
		o.Status.Hard = o.Spec.Hard.DeepCopy()
	}
	if specChanged {
		m.SetGeneration(om.GetGeneration() + 1)
	}
}

// keepAllButStatus makes obj its old self with only the new status (and
// metadata) — what a write to the status subresource may change.
func keepAllButStatus(obj, old runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Spec = old.(*corev1.Pod).Spec
	case *appsv1.Deployment:
		o.Spec = old.(*appsv1.Deployment).Spec
	case *appsv1.ReplicaSet:
		o.Spec = old.(*appsv1.ReplicaSet).Spec
	case *corev1.Node:
		o.Spec = old.(*corev1.Node).Spec
	case *corev1.Namespace:
		o.Spec = old.(*corev1.Namespace).Spec
	case *corev1.ResourceQuota:
		o.Spec = old.(*corev1.ResourceQuota).Spec
	case *corev1.Service:
		o.Spec = old.(*corev1.Service).Spec
	case *batchv1.Job:
		o.Spec = old.(*batchv1.Job).Spec
	}
}

// qosClass computes a pod's QoS class as the kubelet's qos package does.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range containers {
		for name, q := range c.Resources.Requests {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
				if !q.IsZero() {
					requests[name] = q
				}
			}
		}
		for name, q := range c.Resources.Limits {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
				if !q.IsZero() {
					limits[name] = q
				}
			}
		}
		cpuL, hasCPU := c.Resources.Limits[corev1.ResourceCPU]
		memL, hasMem := c.Resources.Limits[corev1.ResourceMemory]
		if !hasCPU || !hasMem || cpuL.IsZero() || memL.IsZero() {
			guaranteed = false
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, ok := c.Resources.Requests[name]
			lim := c.Resources.Limits[name]
			if ok && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
