// Package admission is podtrace's admission chain: the mutating then
// validating plugins kube-apiserver 1.36 runs on every write before the
// object is validated and persisted, with upstream's errors word for word.
//
// The API server builds a chain with New(store), calls Chain.Admit for each
// create, update, delete or connect, and when it fails writes the error (an
// apimachinery StatusError, reachable through errors.As) as the response.
// The *Rejection it returns names the plugin so the admission stage event
// can say which one said no.
package admission

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Operation is the kind of request being admitted.
type Operation string

// The operations admission sees, as upstream spells them.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// User is who makes the request, as authn resolved it.
type User struct {
	Name   string
	Groups []string
}

// Attributes describe one request. Mutators may change Object in place.
type Attributes struct {
	Operation   Operation
	Kind        schema.GroupVersionKind
	Resource    schema.GroupVersionResource
	Subresource string
	Namespace   string
	Name        string
	Object      runtime.Object
	OldObject   runtime.Object
	User        User
	DryRun      bool
}

// Mutator is an admission plugin that may change the object.
type Mutator interface {
	Name() string
	Admit(ctx context.Context, a *Attributes) error
}

// Validator is an admission plugin that only accepts or rejects.
type Validator interface {
	Name() string
	Validate(ctx context.Context, a *Attributes) error
}

// Store is the plugins' view of the cluster's objects, implemented by the
// API server over etcd or its watch cache. resource is the plural
// ("namespaces", "resourcequotas"); errors are apimachinery StatusErrors
// (NotFound, Conflict). UpdateStatus writes obj's status with optimistic
// concurrency on obj's resourceVersion and returns the stored object.
type Store interface {
	Get(ctx context.Context, resource, namespace, name string) (runtime.Object, error)
	List(ctx context.Context, resource, namespace string) ([]runtime.Object, error)
	UpdateStatus(ctx context.Context, resource string, obj runtime.Object) (runtime.Object, error)
}

// Phase says whether a plugin ran as a mutator or a validator.
type Phase string

// The two admission phases.
const (
	Mutating   Phase = "mutating"
	Validating Phase = "validating"
)

// Rejection is the error Chain.Admit returns when a plugin refuses a
// request. Its message and API status are the plugin's own, so it can be
// written to the client unchanged.
type Rejection struct {
	Plugin string
	Phase  Phase
	Err    error
}

// Error returns the plugin's message unchanged.
func (r *Rejection) Error() string { return r.Err.Error() }

// Unwrap returns the plugin's error.
func (r *Rejection) Unwrap() error { return r.Err }

// Status returns the plugin's API status, or an InternalError status when the
// plugin returned a plain error.
func (r *Rejection) Status() metav1.Status {
	var s apierrors.APIStatus
	if errors.As(r.Err, &s) {
		return s.Status()
	}
	return apierrors.NewInternalError(r.Err).Status()
}

// RejectedBy returns the name of the plugin that produced err, or "" when err
// did not come from a plugin.
func RejectedBy(err error) string {
	var r *Rejection
	if errors.As(err, &r) {
		return r.Plugin
	}
	return ""
}

// Chain runs mutators in order, then validators in order; the first error
// stops it.
type Chain struct {
	mutators   []Mutator
	validators []Validator
}

// NewChain returns a chain of the given plugins.
func NewChain(mutators []Mutator, validators []Validator) *Chain {
	return &Chain{mutators: mutators, validators: validators}
}

// New returns the default chain in kube-apiserver's order: the mutating
// NamespaceLifecycle, LimitRanger, ServiceAccount, DefaultTolerationSeconds,
// then the validating LimitRanger, ServiceAccount and ResourceQuota.
func New(store Store) *Chain {
	lr := NewLimitRanger(store)
	sa := NewServiceAccount(store)
	return NewChain(
		[]Mutator{NewNamespaceLifecycle(store), lr, sa, NewDefaultTolerationSeconds()},
		[]Validator{lr, sa, NewResourceQuota(store)},
	)
}

// AddMutator appends a mutating plugin after the existing ones.
func (c *Chain) AddMutator(m Mutator) { c.mutators = append(c.mutators, m) }

// AddValidator appends a validating plugin after the existing ones.
func (c *Chain) AddValidator(v Validator) { c.validators = append(c.validators, v) }

// Plugins returns the plugin names in the order they run, with their phase.
func (c *Chain) Plugins() []string {
	var out []string
	for _, m := range c.mutators {
		out = append(out, string(Mutating)+"/"+m.Name())
	}
	for _, v := range c.validators {
		out = append(out, string(Validating)+"/"+v.Name())
	}
	return out
}

// Admit runs the chain. A non-nil error is a *Rejection.
func (c *Chain) Admit(ctx context.Context, a *Attributes) error {
	for _, m := range c.mutators {
		if err := m.Admit(ctx, a); err != nil {
			return &Rejection{Plugin: m.Name(), Phase: Mutating, Err: err}
		}
	}
	for _, v := range c.validators {
		if err := v.Validate(ctx, a); err != nil {
			return &Rejection{Plugin: v.Name(), Phase: Validating, Err: err}
		}
	}
	return nil
}

// DeleteObserver is implemented by plugins that keep usage of stored
// objects, such as ResourceQuota.
type DeleteObserver interface {
	ReleaseOnDelete(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error
}

// Recalculator is implemented by plugins that can recount their usage
// from the stored objects of a namespace.
type Recalculator interface {
	Recalculate(ctx context.Context, namespace string) error
}

// plugins returns every plugin once, mutators first.
func (c *Chain) plugins() []any {
	seen := map[any]bool{}
	var out []any
	for _, m := range c.mutators {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	for _, v := range c.validators {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// ObjectDeleted tells the plugins that obj, of resource gr, has been removed
// from storage (not merely marked for deletion), so ResourceQuota returns
// its usage. Call it after the final delete of a namespaced object.
func (c *Chain) ObjectDeleted(ctx context.Context, gr schema.GroupResource, obj runtime.Object) error {
	var errs []error
	for _, p := range c.plugins() {
		if d, ok := p.(DeleteObserver); ok {
			if err := d.ReleaseOnDelete(ctx, gr, obj); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Recalculate has the plugins recount usage in namespace from storage, as
// the quota controller does; call it when an admitted create failed to
// persist, or when pods reach Succeeded or Failed.
func (c *Chain) Recalculate(ctx context.Context, namespace string) error {
	var errs []error
	for _, p := range c.plugins() {
		if r, ok := p.(Recalculator); ok {
			if err := r.Recalculate(ctx, namespace); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// NewForbidden is upstream's admission.NewForbidden: a 403 naming the
// resource and the object (its name, else its generateName, else
// "Unknown").
func NewForbidden(a *Attributes, err error) error {
	if apierrors.IsForbidden(err) {
		return err
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), resourceName(a), err)
}

func resourceName(a *Attributes) string {
	if a.Name != "" {
		return a.Name
	}
	if a.Object == nil {
		return "Unknown"
	}
	acc, err := meta.Accessor(a.Object)
	if err != nil {
		return "Unknown/errorGettingName"
	}
	if acc.GetName() != "" {
		return acc.GetName()
	}
	if acc.GetGenerateName() != "" {
		return acc.GetGenerateName()
	}
	return "Unknown"
}

// isPod reports whether a targets pods proper (core group, no
// subresource), the case most plugins act on.
func isPod(a *Attributes) bool {
	return a.Resource.Group == "" && a.Resource.Resource == "pods" && a.Subresource == ""
}

func internalError(format string, args ...any) error {
	return apierrors.NewInternalError(fmt.Errorf(format, args...))
}
