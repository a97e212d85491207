package apiserver

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// toTable converts an object or list into a meta.k8s.io/v1 Table, which
// `kubectl get` prints, with kube-apiserver's columns for the kind (the
// printers of pkg/printers/internalversion; priority-1 columns are the ones
// `-o wide` adds). Kinds without printer columns get kube-apiserver's
// default columns: Name and Created At. include is the request's
// includeObject: each row carries the object's metadata (the default), the
// whole object (Object, which kubectl asks for to --sort-by) or nothing (None).
func (s *Server) toTable(res *Resource, obj runtime.Object, include string) (*metav1.Table, error) {
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, err
		}
		lm, _ := meta.ListAccessor(obj)
		table.ResourceVersion = lm.GetResourceVersion()
		table.Continue = lm.GetContinue()
	} else if m, err := meta.Accessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	p := printerFor(res)
	table.ColumnDefinitions = p.columns
	now := s.cfg.Clock.Now()
	for _, item := range items {
		cells, conditions := p.row(item, now)
		row := metav1.TableRow{Cells: cells, Conditions: conditions}
		switch metav1.IncludeObjectPolicy(include) {
		case metav1.IncludeNone:
		case metav1.IncludeObject:
			item = item.DeepCopyObject()
			item.GetObjectKind().SetGroupVersionKind(res.GVK())
			row.Object.Object = item
		default:
			row.Object.Object = partialMeta(item)
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

// partialMeta is the row object kubectl uses for names and namespaces.
func partialMeta(obj runtime.Object) runtime.Object {
	m, _ := meta.Accessor(obj)
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp(), Labels: m.GetLabels(),
			Annotations: m.GetAnnotations(), DeletionTimestamp: m.GetDeletionTimestamp(), OwnerReferences: m.GetOwnerReferences()}}
}

// printer is one kind's columns and the cells of one object's row.
type printer struct {
	columns []metav1.TableColumnDefinition
	row     func(obj runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition)
}

var (
	colName = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	colAge  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)

// defaultPrinter is kube-apiserver's table for kinds without printers.
var defaultPrinter = printer{
	columns: []metav1.TableColumnDefinition{colName,
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}},
	row: func(obj runtime.Object, _ time.Time) ([]interface{}, []metav1.TableRowCondition) {
		m, _ := meta.Accessor(obj)
		ts, _ := m.GetCreationTimestamp().MarshalQueryParameter()
		return []interface{}{m.GetName(), ts}, nil
	},
}

// printerFor returns the printer for res's kind.
func printerFor(res *Resource) printer {
	if p, ok := printers[res.Kind]; ok {
		return p
	}
	return defaultPrinter
}

// printers are kube-apiserver 1.36's columns and cells, by kind. LimitRange,
// Role and ClusterRole have none upstream either.
var printers = map[string]printer{
	"Pod": {columns: []metav1.TableColumnDefinition{colName,
		{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
		{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
		colAge,
		{Name: "IP", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["podIP"]},
		{Name: "Node", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Nominated Node", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]},
		{Name: "Readiness Gates", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["readinessGates"]},
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return podRow(o.(*corev1.Pod), now)
	}},
	"Deployment": {columns: []metav1.TableColumnDefinition{colName,
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		{Name: "Up-to-date", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]},
		{Name: "Available", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]},
		colAge,
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]},
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		d := o.(*appsv1.Deployment)
		selector := "<invalid>"
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			selector = sel.String()
		}
		names, images := containerCells(d.Spec.Template.Spec.Containers)
		return []interface{}{d.Name, fmt.Sprintf("%d/%d", int64(d.Status.ReadyReplicas), int64(replicas(d.Spec.Replicas))),
			int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), since(d.CreationTimestamp, now),
			names, images, selector}, nil
	}},
	"ReplicaSet": {columns: []metav1.TableColumnDefinition{colName,
		{Name: "Desired", Type: "integer", Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Current", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]},
		{Name: "Ready", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]},
		colAge,
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]},
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		rs := o.(*appsv1.ReplicaSet)
		names, images := containerCells(rs.Spec.Template.Spec.Containers)
		return []interface{}{rs.Name, int64(replicas(rs.Spec.Replicas)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			since(rs.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(rs.Spec.Selector)}, nil
	}},
	"Node": {columns: []metav1.TableColumnDefinition{colName,
		{Name: "Status", Type: "string", Description: "The status of the node"},
		{Name: "Roles", Type: "string", Description: "The roles of the node"},
		colAge,
		{Name: "Version", Type: "string", Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
		{Name: "External-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"]},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]},
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return nodeRow(o.(*corev1.Node), now), nil
	}},
	"Event": {columns: []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: corev1.Event{}.SwaggerDoc()["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: corev1.Event{}.SwaggerDoc()["type"]},
		{Name: "Reason", Type: "string", Description: corev1.Event{}.SwaggerDoc()["reason"]},
		{Name: "Object", Type: "string", Description: corev1.Event{}.SwaggerDoc()["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.Event{}.InvolvedObject.SwaggerDoc()["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["source"]},
		{Name: "Message", Type: "string", Description: corev1.Event{}.SwaggerDoc()["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["count"]},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return eventRow(o.(*corev1.Event), now), nil
	}},
	"Namespace": {columns: []metav1.TableColumnDefinition{colName,
		{Name: "Status", Type: "string", Description: "The status of the namespace"}, colAge,
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		ns := o.(*corev1.Namespace)
		return []interface{}{ns.Name, string(ns.Status.Phase), since(ns.CreationTimestamp, now)}, nil
	}},
	"Secret": {columns: []metav1.TableColumnDefinition{colName,
		{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
		{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]}, colAge,
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		s := o.(*corev1.Secret)
		return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), since(s.CreationTimestamp, now)}, nil
	}},
	"ServiceAccount": {columns: []metav1.TableColumnDefinition{colName, colAge},
		row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
			sa := o.(*corev1.ServiceAccount)
			return []interface{}{sa.Name, since(sa.CreationTimestamp, now)}, nil
		}},
	"ConfigMap": {columns: []metav1.TableColumnDefinition{colName,
		{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]}, colAge,
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		cm := o.(*corev1.ConfigMap)
		return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), since(cm.CreationTimestamp, now)}, nil
	}},
	"ResourceQuota": {columns: []metav1.TableColumnDefinition{colName,
		{Name: "Request", Type: "string", Description: "Request represents a minimum amount of cpu/memory that a container may consume."},
		{Name: "Limit", Type: "string", Description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."},
		colAge,
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		return quotaRow(o.(*corev1.ResourceQuota), now), nil
	}},
	"RoleBinding": {columns: bindingColumns("roleBinding", rbacv1beta1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
			b := o.(*rbacv1.RoleBinding)
			return bindingRow(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp, now), nil
		}},
	"ClusterRoleBinding": {columns: bindingColumns("clusterRoleBinding", rbacv1beta1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"]),
		row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
			b := o.(*rbacv1.ClusterRoleBinding)
			return bindingRow(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp, now), nil
		}},
	"Lease": {columns: []metav1.TableColumnDefinition{colName,
		{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]}, colAge,
	}, row: func(o runtime.Object, now time.Time) ([]interface{}, []metav1.TableRowCondition) {
		l := o.(*coordinationv1.Lease)
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []interface{}{l.Name, holder, since(l.CreationTimestamp, now)}, nil
	}},
}

// since is kubectl's AGE: a human duration, <unknown> for no timestamp.
func since(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func sinceMicro(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func replicas(r *int32) int32 {
	if r == nil {
		return 0
	}
	return *r
}

func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	i := make([]string, len(containers))
	for k, c := range containers {
		n[k], i[k] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// Node role labels, as kubectl reads them.
const (
	labelNodeRolePrefix = "node-role.kubernetes.io/"
	nodeLabelRole       = "kubernetes.io/role"
)

func nodeRow(n *corev1.Node, now time.Time) []interface{} {
	var status []string
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				status = append(status, string(c.Type))
			} else {
				status = append(status, "Not"+string(c.Type))
			}
		}
	}
	if len(status) == 0 {
		status = append(status, "Unknown")
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	roleSet := map[string]bool{}
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			if role := strings.TrimPrefix(k, labelNodeRolePrefix); role != "" {
				roleSet[role] = true
			}
		case k == nodeLabelRole && v != "":
			roleSet[v] = true
		}
	}
	roles := make([]string, 0, len(roleSet))
	for r := range roleSet {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	rolesCell := strings.Join(roles, ",")
	if rolesCell == "" {
		rolesCell = "<none>"
	}
	info := n.Status.NodeInfo
	osImage, kernel, runtimeVersion := orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	return []interface{}{n.Name, strings.Join(status, ","), rolesCell, since(n.CreationTimestamp, now), info.KubeletVersion,
		nodeAddress(n, corev1.NodeInternalIP), nodeAddress(n, corev1.NodeExternalIP), osImage, kernel, runtimeVersion}
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

func nodeAddress(n *corev1.Node, typ corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == typ {
			return a.Address
		}
	}
	return "<none>"
}

func eventRow(e *corev1.Event, now time.Time) []interface{} {
	first := since(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = sinceMicro(e.EventTime, now)
	}
	last := since(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = sinceMicro(e.Series.LastObservedTime, now)
		count = e.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	component, instance := e.Source.Component, e.Source.Host
	if component == "" {
		component = e.ReportingController
	}
	if instance == "" {
		instance = e.ReportingInstance
	}
	source := component
	if instance != "" {
		source += ", " + instance
	}
	return []interface{}{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, source,
		strings.TrimSpace(e.Message), first, int64(count), e.Name}
}

func quotaRow(q *corev1.ResourceQuota, now time.Time) []interface{} {
	names := make([]string, 0, len(q.Status.Hard))
	for name := range q.Status.Hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var request, limit bytes.Buffer
	for _, name := range names {
		w := &request
		if pieces := strings.Split(name, "."); len(pieces) > 1 && pieces[0] == "limits" {
			w = &limit
		}
		used, hard := q.Status.Used[corev1.ResourceName(name)], q.Status.Hard[corev1.ResourceName(name)]
		fmt.Fprintf(w, "%s: %s/%s, ", name, used.String(), hard.String())
	}
	return []interface{}{q.Name, strings.TrimSuffix(request.String(), ", "), strings.TrimSuffix(limit.String(), ", "),
		since(q.CreationTimestamp, now)}
}

func bindingColumns(what, roleRef string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{colName,
		{Name: "Role", Type: "string", Description: roleRef}, colAge,
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + what},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + what},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + what},
	}
}

func bindingRow(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, created metav1.Time, now time.Time) []interface{} {
	users, groups, sas := []string{}, []string{}, []string{}
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		}
	}
	return []interface{}{name, ref.Kind + "/" + ref.Name, since(created, now),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}
