// Package defaults applies the field defaults kube-apiserver 1.36 sets on
// objects before admission and validation: the generated and hand-written
// SetDefaults_* functions of pkg/apis/core/v1, apps/v1 and rbac/v1, plus the
// few values upstream fills in its registry strategies or the Priority
// admission plugin (namespace finalizers and phase, pod priority and
// preemptionPolicy) so that a stored object looks as kube-apiserver stores it.
package defaults

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Default sets upstream defaults on obj in place. Kinds podtrace does not
// serve are left untouched.
func Default(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		Pod(o)
	case *corev1.PodTemplate:
		podTemplateSpec(&o.Template)
	case *appsv1.Deployment:
		Deployment(o)
	case *appsv1.ReplicaSet:
		ReplicaSet(o)
	case *corev1.Namespace:
		Namespace(o)
	case *corev1.Node:
		Node(o)
	case *corev1.Secret:
		if o.Type == "" {
			o.Type = corev1.SecretTypeOpaque
		}
	case *corev1.ConfigMap:
		if o.Data == nil {
			o.Data = map[string]string{}
		}
	case *corev1.LimitRange:
		for i := range o.Spec.Limits {
			limitRangeItem(&o.Spec.Limits[i])
		}
	case *corev1.ResourceQuota:
		roundUp(o.Spec.Hard)
	case *rbacv1.RoleBinding:
		roleBinding(&o.RoleRef, o.Subjects)
	case *rbacv1.ClusterRoleBinding:
		roleBinding(&o.RoleRef, o.Subjects)
	case *corev1.Service:
		Service(o)
	case *batchv1.Job:
		Job(o)
	case *discoveryv1.EndpointSlice:
		EndpointSlice(o)
	case *corev1.Endpoints:
		Endpoints(o)
	case *coordinationv1.Lease:
		// Lease has no defaults in coordination/v1.
	case *corev1.PodList:
		for i := range o.Items {
			Pod(&o.Items[i])
		}
	}
}

// Pod applies SetDefaults_Pod, SetDefaults_PodSpec, SetDefaults_Container,
// SetDefaults_Probe and the volume source defaults, plus the Priority
// admission plugin's priority 0 and preemptionPolicy PreemptLowerPriority.
func Pod(pod *corev1.Pod) {
	podSpec(&pod.Spec)
	if pod.Spec.Priority == nil {
		p := int32(0)
		pod.Spec.Priority = &p
	}
	if pod.Spec.PreemptionPolicy == nil {
		p := corev1.PreemptLowerPriority
		pod.Spec.PreemptionPolicy = &p
	}
}

// Deployment applies SetDefaults_Deployment and the pod template defaults.
func Deployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = int32Ptr(1)
	}
	s := &d.Spec.Strategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			v := intstr.FromString("25%")
			s.RollingUpdate.MaxUnavailable = &v
		}
		if s.RollingUpdate.MaxSurge == nil {
			v := intstr.FromString("25%")
			s.RollingUpdate.MaxSurge = &v
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = int32Ptr(10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = int32Ptr(600)
	}
	podTemplateSpec(&d.Spec.Template)
}

// ReplicaSet applies SetDefaults_ReplicaSet and the pod template defaults.
func ReplicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = int32Ptr(1)
	}
	podTemplateSpec(&rs.Spec.Template)
}

// Namespace applies SetDefaults_Namespace (the kubernetes.io/metadata.name
// label), SetDefaults_NamespaceStatus (phase Active) and the namespace
// strategy's spec.finalizers [kubernetes] on create.
func Namespace(ns *corev1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
	if ns.Spec.Finalizers == nil {
		ns.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
	}
}

// Node applies SetDefaults_NodeStatus: allocatable defaults to capacity.
func Node(n *corev1.Node) {
	roundUp(n.Status.Capacity)
	roundUp(n.Status.Allocatable)
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
}

func podTemplateSpec(t *corev1.PodTemplateSpec) {
	podSpec(&t.Spec)
}

func podSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		p := int64(corev1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &p
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.EnableServiceLinks == nil {
		b := corev1.DefaultEnableServiceLinks
		spec.EnableServiceLinks = &b
	}
	for i := range spec.Containers {
		container(&spec.Containers[i], spec.HostNetwork)
	}
	for i := range spec.InitContainers {
		container(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Volumes {
		volume(&spec.Volumes[i])
	}
}

func container(c *corev1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		} else {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	roundUp(c.Resources.Limits)
	roundUp(c.Resources.Requests)
	// SetDefaults_Pod: requests default to limits.
	if c.Resources.Limits != nil {
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		for k, v := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[k]; !ok {
				c.Resources.Requests[k] = v.DeepCopy()
			}
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		probe(p)
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				httpGet(h.HTTPGet)
			}
		}
	}
}

func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	httpGet(p.HTTPGet)
}

func httpGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func volume(v *corev1.Volume) {
	s := &v.VolumeSource
	switch {
	case s.Secret != nil:
		if s.Secret.DefaultMode == nil {
			s.Secret.DefaultMode = int32Ptr(corev1.SecretVolumeSourceDefaultMode)
		}
	case s.ConfigMap != nil:
		if s.ConfigMap.DefaultMode == nil {
			s.ConfigMap.DefaultMode = int32Ptr(corev1.ConfigMapVolumeSourceDefaultMode)
		}
	case s.DownwardAPI != nil:
		if s.DownwardAPI.DefaultMode == nil {
			s.DownwardAPI.DefaultMode = int32Ptr(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
	case s.Projected != nil:
		if s.Projected.DefaultMode == nil {
			s.Projected.DefaultMode = int32Ptr(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range s.Projected.Sources {
			if t := s.Projected.Sources[i].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				h := int64(3600)
				t.ExpirationSeconds = &h
			}
		}
	case s.HostPath != nil:
		if s.HostPath.Type == nil {
			t := corev1.HostPathUnset
			s.HostPath.Type = &t
		}
	case s.EmptyDir != nil:
	default:
		if isEmptyVolumeSource(s) {
			s.EmptyDir = &corev1.EmptyDirVolumeSource{}
		}
	}
}

// isEmptyVolumeSource reports whether no volume source is set, the case in
// which SetDefaults_Volume picks emptyDir.
func isEmptyVolumeSource(s *corev1.VolumeSource) bool {
	return s.Secret == nil && s.ConfigMap == nil && s.DownwardAPI == nil &&
		s.Projected == nil && s.HostPath == nil && s.EmptyDir == nil &&
		s.PersistentVolumeClaim == nil && s.NFS == nil && s.CSI == nil &&
		s.Ephemeral == nil && s.Image == nil && s.ISCSI == nil && s.FC == nil &&
		s.GitRepo == nil && s.Glusterfs == nil && s.RBD == nil && s.CephFS == nil
}

func limitRangeItem(item *corev1.LimitRangeItem) {
	if item.Type != corev1.LimitTypeContainer {
		return
	}
	if item.Default == nil {
		item.Default = corev1.ResourceList{}
	}
	if item.DefaultRequest == nil {
		item.DefaultRequest = corev1.ResourceList{}
	}
	for k, v := range item.Max {
		if _, ok := item.Default[k]; !ok {
			item.Default[k] = v.DeepCopy()
		}
	}
	for k, v := range item.Default {
		if _, ok := item.DefaultRequest[k]; !ok {
			item.DefaultRequest[k] = v.DeepCopy()
		}
	}
	for k, v := range item.Min {
		if _, ok := item.DefaultRequest[k]; !ok {
			item.DefaultRequest[k] = v.DeepCopy()
		}
	}
}

func roleBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// roundUp is SetDefaults_ResourceList: quantities are rounded up to milli
// precision.
func roundUp(list corev1.ResourceList) {
	for k, v := range list {
		v.RoundUp(-3)
		list[k] = v
	}
}

// imageTag returns the tag of an image reference the way the docker
// reference parser upstream uses does: "latest" when neither a tag nor a
// digest is given, "" when only a digest is given.
func imageTag(image string) string {
	name, _, hasDigest := strings.Cut(image, "@")
	last := name
	if i := strings.LastIndex(name, "/"); i >= 0 {
		last = name[i+1:]
	}
	if i := strings.LastIndex(last, ":"); i >= 0 {
		return last[i+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

func int32Ptr(v int32) *int32 { return &v }
