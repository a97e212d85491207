package admission

import (
	"context"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// memStore is an in-memory Store with resourceVersions and optimistic
// concurrency, standing in for the API server's etcd-backed store in these
// tests. The hooks, when set, run around the operation and may fail it.
type memStore struct {
	mu      sync.Mutex
	rv      int
	objs    map[string]runtime.Object // resource/namespace/name
	updates int

	beforeUpdate func(obj runtime.Object) error
	afterList    func(resource string) error
}

func newMemStore(objs map[string][]runtime.Object) *memStore {
	s := &memStore{objs: map[string]runtime.Object{}}
	for resource, list := range objs {
		for _, o := range list {
			s.put(resource, o)
		}
	}
	return s
}

func key(resource, namespace, name string) string { return resource + "/" + namespace + "/" + name }

func (s *memStore) put(resource string, obj runtime.Object) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	s.rv++
	acc.SetResourceVersion(strconv.Itoa(s.rv))
	s.objs[key(resource, acc.GetNamespace(), acc.GetName())] = obj.DeepCopyObject()
}

func (s *memStore) Get(_ context.Context, resource, namespace, name string) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[key(resource, namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
	}
	return o.DeepCopyObject(), nil
}

func (s *memStore) List(_ context.Context, resource, namespace string) ([]runtime.Object, error) {
	s.mu.Lock()
	var out []runtime.Object
	for k, o := range s.objs {
		acc, _ := meta.Accessor(o)
		if k == key(resource, acc.GetNamespace(), acc.GetName()) && (namespace == "" || acc.GetNamespace() == namespace) {
			out = append(out, o.DeepCopyObject())
		}
	}
	s.mu.Unlock()
	if s.afterList != nil {
		if err := s.afterList(resource); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *memStore) UpdateStatus(_ context.Context, resource string, obj runtime.Object) (runtime.Object, error) {
	if s.beforeUpdate != nil {
		if err := s.beforeUpdate(obj); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	k := key(resource, acc.GetNamespace(), acc.GetName())
	cur, ok := s.objs[k]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, acc.GetName())
	}
	curAcc, _ := meta.Accessor(cur)
	if curAcc.GetResourceVersion() != acc.GetResourceVersion() {
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: resource}, acc.GetName(),
			errorString("the object has been modified; please apply your changes to the latest version and try again"))
	}
	s.updates++
	s.put(resource, obj)
	return s.objs[k].DeepCopyObject(), nil
}

// create stores a new object the way a successful persist would.
func (s *memStore) create(resource string, obj runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(resource, obj)
}

func (s *memStore) remove(resource, namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objs, key(resource, namespace, name))
}

type errorString string

func (e errorString) Error() string { return string(e) }
