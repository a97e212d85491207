package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/podtrace/podtrace/engine"
	"github.com/podtrace/podtrace/engine/apply"
)

// Annotate is a fix's last step, as `kubectl annotate RESOURCE -n NAMESPACE
// -l SELECTOR KEY=VALUE --overwrite`: an update of every object selected,
// which their controller (its informer's update handler) queues at once.
// A controller that failed to sync waits out its workqueue's back-off
// (the ReplicaSet controller's doubles from 5 ms to 16m40s) unless an
// object it watches changes.
type Annotate struct {
	// Resource is a plural, singular or short name, as kubectl takes it.
	Resource string
	// Namespace is the goal's.
	Namespace string
	// Selector is a label selector.
	Selector string
	// Key and Value are the annotation set.
	Key, Value string
}

type annotateYAML struct {
	Resource   string `yaml:"resource"`
	Selector   string `yaml:"selector"`
	Annotation string `yaml:"annotation"`
}

// annotate checks fix.annotate; nil when the file has none.
func (p parser) annotate(a *annotateYAML, namespace string) (*Annotate, error) {
	if a == nil {
		return nil, nil
	}
	at := func(field string) []any { return []any{"fix", "annotate", field} }
	if a.Resource == "" || strings.ContainsAny(a.Resource, "/ ") {
		return nil, p.errorf(at("resource"), "want a resource such as replicasets")
	}
	if _, err := labels.Parse(a.Selector); err != nil || a.Selector == "" {
		return nil, p.errorf(at("selector"), "want a label selector such as app=web")
	}
	key, value, ok := strings.Cut(a.Annotation, "=")
	if !ok {
		return nil, p.errorf(at("annotation"), "want KEY=VALUE")
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return nil, p.errorf(at("annotation"), "%q: %s", key, strings.Join(errs, "; "))
	}
	return &Annotate{Resource: a.Resource, Namespace: namespace, Selector: a.Selector, Key: key, Value: value}, nil
}

// Kubectl is the kubectl command line that does it.
func (a *Annotate) Kubectl() string {
	ns := ""
	if a.Namespace != "default" {
		ns = " -n " + a.Namespace
	}
	return fmt.Sprintf("kubectl annotate %s%s -l %s %s=%s --overwrite", a.Resource, ns, a.Selector, a.Key, a.Value)
}

// Run annotates the selected objects as kubectl annotate does (a merge
// patch of metadata.annotations) and returns how many it updated.
func (a *Annotate) Run(ctx context.Context, e *engine.Engine) (int, error) {
	dyn, err := dynamic.NewForConfig(e.AdminConfig())
	if err != nil {
		return 0, err
	}
	mapper, err := apply.Mapper(e.AdminConfig())
	if err != nil {
		return 0, err
	}
	gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: strings.ToLower(a.Resource)})
	if err != nil {
		return 0, fmt.Errorf("annotate: the server doesn't have a resource type %q", a.Resource)
	}
	ri := dyn.Resource(gvr).Namespace(a.Namespace)
	if gvk, err := mapper.KindFor(gvr); err == nil {
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil && m.Scope.Name() != meta.RESTScopeNameNamespace {
			return 0, fmt.Errorf("annotate: %s are not namespaced", a.Resource)
		}
	}
	list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: a.Selector})
	if err != nil {
		return 0, fmt.Errorf("annotate %s -l %s: %w", a.Resource, a.Selector, err)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{a.Key: a.Value}}})
	for _, obj := range list.Items {
		if _, err := ri.Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err != nil {
			return 0, fmt.Errorf("annotate %s/%s: %w", a.Resource, obj.GetName(), err)
		}
	}
	return len(list.Items), nil
}
