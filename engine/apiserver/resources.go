package apiserver

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource describes one REST resource the server serves: its URL and
// discovery facts, where it lives in etcd, and how to make its objects.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Singular   string
	Namespaced bool
	ShortNames []string
	Categories []string
	// EtcdPrefix is the resource's directory under /registry (nodes live
	// under "minions", as in kube-apiserver).
	EtcdPrefix string
	// Subresources served under the resource (status, binding, scale, log).
	Subresources []string
	// Traced resources report the API stages (authn … persist) of their writes.
	Traced  bool
	New     func() runtime.Object
	NewList func() runtime.Object
	// Fields returns the field-selector set of an object beyond metadata.name/namespace.
	Fields func(runtime.Object) fields.Set
	// Begin, when set (with ObjectStore.SetBegin, before the server takes
	// writes), runs on every create and update after validation.
	Begin BeginFunc
}

// BeginFunc is a resource's step before the etcd write, as kube-apiserver's
// BeginCreate and BeginUpdate: it may fill in obj (old is nil on a create)
// and hold what obj needs (a Service's cluster IP and node ports) in the
// Transaction it returns; with dryRun it checks and fills in but holds
// nothing. Its error is the API's answer (an Invalid or an InternalError).
// Upstream runs it between mutating admission and validation; here it runs
// after validation, so an invalid object holds nothing.
type BeginFunc func(obj, old runtime.Object, dryRun bool) (Transaction, error)

// Transaction is what a BeginFunc holds for one write. The write path ends
// it exactly once: Commit after the object is stored (or the dry run
// answered), Revert when it is not.
type Transaction interface {
	Commit()
	Revert()
}

// noTransaction ends the writes of resources without a Begin step.
type noTransaction struct{}

func (noTransaction) Commit() {}
func (noTransaction) Revert() {}

// begin runs res's Begin step, if any.
func (r *Resource) begin(obj, old runtime.Object, dryRun bool) (Transaction, error) {
	if r.Begin == nil {
		return noTransaction{}, nil
	}
	return r.Begin(obj, old, dryRun)
}

// SetBegin installs the Begin step of a resource (by plural name). It must
// be called before the server takes writes.
func (o *ObjectStore) SetBegin(resource string, begin BeginFunc) error {
	r, err := o.resource(resource)
	if err != nil {
		return err
	}
	r.Begin = begin
	return nil
}

// GVK returns the resource's group, version and kind.
func (r *Resource) GVK() schema.GroupVersionKind { return r.GVR.GroupVersion().WithKind(r.Kind) }

// GroupResource returns the resource's group and plural name, as errors name it.
func (r *Resource) GroupResource() schema.GroupResource { return r.GVR.GroupResource() }

// Key returns the etcd key of the named object.
func (r *Resource) Key(namespace, name string) string {
	if r.Namespaced {
		return "/registry/" + r.EtcdPrefix + "/" + namespace + "/" + name
	}
	return "/registry/" + r.EtcdPrefix + "/" + name
}

// Prefix returns the etcd key prefix of a namespace's objects (all of them
// when namespace is empty), with a trailing slash.
func (r *Resource) Prefix(namespace string) string {
	if r.Namespaced && namespace != "" {
		return "/registry/" + r.EtcdPrefix + "/" + namespace + "/"
	}
	return "/registry/" + r.EtcdPrefix + "/"
}

// HasSubresource reports whether sub is served for this resource.
func (r *Resource) HasSubresource(sub string) bool {
	for _, s := range r.Subresources {
		if s == sub {
			return true
		}
	}
	return false
}

var (
	coreV1      = schema.GroupVersion{Version: "v1"}
	appsV1      = appsv1.SchemeGroupVersion
	rbacV1      = rbacv1.SchemeGroupVersion
	coordV1     = coordinationv1.SchemeGroupVersion
	discoveryV1 = discoveryv1.SchemeGroupVersion
	batchV1     = batchv1.SchemeGroupVersion
	allCat      = []string{"all"}
	noFields    = func(runtime.Object) fields.Set { return nil }
)

// Resources returns the resources podtrace serves, in discovery order.
func Resources() []*Resource {
	return []*Resource{
		{GVR: coreV1.WithResource("namespaces"), Kind: "Namespace", Singular: "namespace", ShortNames: []string{"ns"},
			EtcdPrefix: "namespaces", Subresources: []string{"status", "finalize"},
			New: func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} },
			Fields: func(o runtime.Object) fields.Set {
				return fields.Set{"status.phase": string(o.(*corev1.Namespace).Status.Phase)}
			}},
		{GVR: coreV1.WithResource("pods"), Kind: "Pod", Singular: "pod", Namespaced: true, ShortNames: []string{"po"},
			Categories: allCat, EtcdPrefix: "pods", Subresources: []string{"status", "binding", "log"}, Traced: true,
			New: func() runtime.Object { return &corev1.Pod{} }, NewList: func() runtime.Object { return &corev1.PodList{} },
			Fields: podFields},
		{GVR: coreV1.WithResource("nodes"), Kind: "Node", Singular: "node", ShortNames: []string{"no"},
			EtcdPrefix: "minions", Subresources: []string{"status"},
			New: func() runtime.Object { return &corev1.Node{} }, NewList: func() runtime.Object { return &corev1.NodeList{} },
			Fields: func(o runtime.Object) fields.Set {
				return fields.Set{"spec.unschedulable": boolString(o.(*corev1.Node).Spec.Unschedulable)}
			}},
		{GVR: coreV1.WithResource("events"), Kind: "Event", Singular: "event", Namespaced: true, ShortNames: []string{"ev"},
			EtcdPrefix: "events",
			New:        func() runtime.Object { return &corev1.Event{} }, NewList: func() runtime.Object { return &corev1.EventList{} },
			Fields: eventFields},
		{GVR: coreV1.WithResource("services"), Kind: "Service", Singular: "service", Namespaced: true,
			ShortNames: []string{"svc"}, Categories: allCat, EtcdPrefix: "services/specs", Subresources: []string{"status"},
			New: func() runtime.Object { return &corev1.Service{} }, NewList: func() runtime.Object { return &corev1.ServiceList{} },
			Fields: func(o runtime.Object) fields.Set {
				s := o.(*corev1.Service)
				return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
			}},
		{GVR: coreV1.WithResource("endpoints"), Kind: "Endpoints", Singular: "endpoints", Namespaced: true,
			ShortNames: []string{"ep"}, EtcdPrefix: "services/endpoints",
			New: func() runtime.Object { return &corev1.Endpoints{} }, NewList: func() runtime.Object { return &corev1.EndpointsList{} },
			Fields: noFields},
		{GVR: coreV1.WithResource("serviceaccounts"), Kind: "ServiceAccount", Singular: "serviceaccount", Namespaced: true,
			ShortNames: []string{"sa"}, EtcdPrefix: "serviceaccounts",
			New: func() runtime.Object { return &corev1.ServiceAccount{} }, NewList: func() runtime.Object { return &corev1.ServiceAccountList{} },
			Fields: noFields},
		{GVR: coreV1.WithResource("configmaps"), Kind: "ConfigMap", Singular: "configmap", Namespaced: true,
			ShortNames: []string{"cm"}, EtcdPrefix: "configmaps",
			New: func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
			Fields: noFields},
		{GVR: coreV1.WithResource("secrets"), Kind: "Secret", Singular: "secret", Namespaced: true, EtcdPrefix: "secrets",
			New: func() runtime.Object { return &corev1.Secret{} }, NewList: func() runtime.Object { return &corev1.SecretList{} },
			Fields: func(o runtime.Object) fields.Set { return fields.Set{"type": string(o.(*corev1.Secret).Type)} }},
		{GVR: coreV1.WithResource("resourcequotas"), Kind: "ResourceQuota", Singular: "resourcequota", Namespaced: true,
			ShortNames: []string{"quota"}, EtcdPrefix: "resourcequotas", Subresources: []string{"status"},
			New: func() runtime.Object { return &corev1.ResourceQuota{} }, NewList: func() runtime.Object { return &corev1.ResourceQuotaList{} },
			Fields: noFields},
		{GVR: coreV1.WithResource("limitranges"), Kind: "LimitRange", Singular: "limitrange", Namespaced: true,
			ShortNames: []string{"limits"}, EtcdPrefix: "limitranges",
			New: func() runtime.Object { return &corev1.LimitRange{} }, NewList: func() runtime.Object { return &corev1.LimitRangeList{} },
			Fields: noFields},
		{GVR: appsV1.WithResource("deployments"), Kind: "Deployment", Singular: "deployment", Namespaced: true,
			ShortNames: []string{"deploy"}, Categories: allCat, EtcdPrefix: "deployments",
			Subresources: []string{"status", "scale"}, Traced: true,
			New: func() runtime.Object { return &appsv1.Deployment{} }, NewList: func() runtime.Object { return &appsv1.DeploymentList{} },
			Fields: noFields},
		{GVR: appsV1.WithResource("replicasets"), Kind: "ReplicaSet", Singular: "replicaset", Namespaced: true,
			ShortNames: []string{"rs"}, Categories: allCat, EtcdPrefix: "replicasets",
			Subresources: []string{"status", "scale"}, Traced: true,
			New: func() runtime.Object { return &appsv1.ReplicaSet{} }, NewList: func() runtime.Object { return &appsv1.ReplicaSetList{} },
			Fields: func(o runtime.Object) fields.Set {
				return fields.Set{"status.replicas": itoa(int64(o.(*appsv1.ReplicaSet).Status.Replicas))}
			}},
		{GVR: batchV1.WithResource("jobs"), Kind: "Job", Singular: "job", Namespaced: true,
			Categories: allCat, EtcdPrefix: "jobs", Subresources: []string{"status"},
			New: func() runtime.Object { return &batchv1.Job{} }, NewList: func() runtime.Object { return &batchv1.JobList{} },
			Fields: func(o runtime.Object) fields.Set {
				return fields.Set{"status.successful": itoa(int64(o.(*batchv1.Job).Status.Succeeded))}
			}},
		{GVR: rbacV1.WithResource("roles"), Kind: "Role", Singular: "role", Namespaced: true, EtcdPrefix: "roles",
			New: func() runtime.Object { return &rbacv1.Role{} }, NewList: func() runtime.Object { return &rbacv1.RoleList{} },
			Fields: noFields},
		{GVR: rbacV1.WithResource("rolebindings"), Kind: "RoleBinding", Singular: "rolebinding", Namespaced: true,
			EtcdPrefix: "rolebindings",
			New:        func() runtime.Object { return &rbacv1.RoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} },
			Fields: noFields},
		{GVR: rbacV1.WithResource("clusterroles"), Kind: "ClusterRole", Singular: "clusterrole", EtcdPrefix: "clusterroles",
			New: func() runtime.Object { return &rbacv1.ClusterRole{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} },
			Fields: noFields},
		{GVR: rbacV1.WithResource("clusterrolebindings"), Kind: "ClusterRoleBinding", Singular: "clusterrolebinding",
			EtcdPrefix: "clusterrolebindings",
			New:        func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
			Fields: noFields},
		{GVR: discoveryV1.WithResource("endpointslices"), Kind: "EndpointSlice", Singular: "endpointslice", Namespaced: true,
			EtcdPrefix: "endpointslices",
			New:        func() runtime.Object { return &discoveryv1.EndpointSlice{} }, NewList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
			Fields: noFields},
		{GVR: coordV1.WithResource("leases"), Kind: "Lease", Singular: "lease", Namespaced: true, EtcdPrefix: "leases",
			New: func() runtime.Object { return &coordinationv1.Lease{} }, NewList: func() runtime.Object { return &coordinationv1.LeaseList{} },
			Fields: noFields},
	}
}

func podFields(o runtime.Object) fields.Set {
	p := o.(*corev1.Pod)
	return fields.Set{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         boolString(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

func eventFields(o runtime.Object) fields.Set {
	e := o.(*corev1.Event)
	return fields.Set{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         e.Source.Component,
		"type":                           e.Type,
	}
}

// objectFields returns the full field-selector set of obj.
func (r *Resource) objectFields(obj runtime.Object) fields.Set {
	m, _ := meta.Accessor(obj)
	set := fields.Set{"metadata.name": m.GetName()}
	if r.Namespaced {
		set["metadata.namespace"] = m.GetNamespace()
	}
	for k, v := range r.Fields(obj) {
		set[k] = v
	}
	return set
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
