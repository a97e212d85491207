package apiserver

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// toTable converts an object or list into a meta.k8s.io/v1 Table, which
// `kubectl get` prints. Resources without printer columns get kube-apiserver's
// default columns: Name and Created At.
func (s *Server) toTable(res *Resource, obj runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, err
		}
		lm, _ := meta.ListAccessor(obj)
		table.ResourceVersion = lm.GetResourceVersion()
	}
	cols, row := printerFor(res)
	table.ColumnDefinitions = cols
	for _, item := range items {
		cells, err := row(item)
		if err != nil {
			return nil, err
		}
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: partialMeta(item)}})
	}
	return table, nil
}

// partialMeta is the row object kubectl uses for names and namespaces.
func partialMeta(obj runtime.Object) runtime.Object {
	m, _ := meta.Accessor(obj)
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp(), Labels: m.GetLabels()}}
}

// printerFor returns the columns and row function for res.
func printerFor(res *Resource) ([]metav1.TableColumnDefinition, func(runtime.Object) ([]interface{}, error)) {
	cols := []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	}
	return cols, func(obj runtime.Object) ([]interface{}, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		ts, _ := m.GetCreationTimestamp().MarshalQueryParameter()
		return []interface{}{m.GetName(), ts}, nil
	}
}
