package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// store keeps one resource's objects in etcd as kube-apiserver does: under
// /registry/<resource>/<namespace>/<name>, encoded as Kubernetes protobuf,
// with the etcd mod revision as resourceVersion.
type store struct {
	res   *Resource
	etcd  *clientv3.Client
	proto *protobuf.Serializer
	// applied waits until the watch cache has seen a revision this store wrote.
	applied func(ctx context.Context, rev int64)
}

var storageCodec = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

func newStore(res *Resource, c *clientv3.Client) *store {
	return &store{res: res, etcd: c, proto: storageCodec}
}

// encode returns obj's storage bytes. resourceVersion is never stored: etcd's
// revision is the truth.
func (s *store) encode(obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	obj.GetObjectKind().SetGroupVersionKind(s.res.GVK())
	var buf bytes.Buffer
	err = s.proto.Encode(obj, &buf)
	m.SetResourceVersion(rv)
	return buf.Bytes(), err
}

// decode turns storage bytes at revision rev into an object.
func (s *store) decode(data []byte, rev int64) (runtime.Object, error) {
	obj, _, err := s.proto.Decode(data, nil, s.res.New())
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", s.res.GVR.Resource, err)
	}
	setRV(obj, rev)
	obj.GetObjectKind().SetGroupVersionKind(s.res.GVK())
	return obj, nil
}

func setRV(obj runtime.Object, rev int64) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
	}
}

func parseRV(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	rv, err := strconv.ParseInt(s, 10, 64)
	if err != nil || rv < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", s))
	}
	return rv, nil
}

// create writes obj if no object has its key yet.
func (s *store) create(ctx context.Context, namespace, name string, obj runtime.Object) (runtime.Object, error) {
	data, err := s.encode(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	key := s.res.Key(namespace, name)
	resp, err := s.etcd.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(data))).Commit()
	if err != nil {
		return nil, etcdError(err)
	}
	if !resp.Succeeded {
		return nil, apierrors.NewAlreadyExists(s.res.GroupResource(), name)
	}
	setRV(obj, resp.Header.Revision)
	s.wrote(ctx, resp.Header.Revision)
	return obj, nil
}

// get reads one object.
func (s *store) get(ctx context.Context, namespace, name string) (runtime.Object, error) {
	resp, err := s.etcd.Get(ctx, s.res.Key(namespace, name))
	if err != nil {
		return nil, etcdError(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, apierrors.NewNotFound(s.res.GroupResource(), name)
	}
	return s.decode(resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

// list reads every object under the namespace (all namespaces when empty)
// and returns them with the revision of the read.
func (s *store) list(ctx context.Context, namespace string) ([]runtime.Object, int64, error) {
	resp, err := s.etcd.Get(ctx, s.res.Prefix(namespace), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, etcdError(err)
	}
	out := make([]runtime.Object, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		obj, err := s.decode(kv.Value, kv.ModRevision)
		if err != nil {
			return nil, 0, apierrors.NewInternalError(err)
		}
		out = append(out, obj)
	}
	return out, resp.Header.Revision, nil
}

// errRetry tells update to read again and retry the change.
var errRetry = errors.New("retry")

// update applies change to a copy of the current object and writes it back
// if nobody wrote in between, retrying on such races. Like kube-apiserver's
// GuaranteedUpdate, the first attempt starts from the cached object (hint,
// when non-nil) and only a lost race costs a read from etcd. change may
// return a Conflict (or any API error) to stop. It returns what was stored.
func (s *store) update(ctx context.Context, namespace, name string, hint func() runtime.Object,
	change func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	key := s.res.Key(namespace, name)
	for attempt := 0; ; attempt++ {
		var current runtime.Object
		if attempt == 0 && hint != nil {
			current = hint()
		}
		fromCache := current != nil
		if current == nil {
			var err error
			if current, err = s.get(ctx, namespace, name); err != nil {
				return nil, err
			}
		}
		rev := mustRV(current)
		updated, err := change(current.DeepCopyObject())
		if (errors.Is(err, errRetry) || fromCache && apierrors.IsConflict(err)) && attempt < 100 {
			continue // a stale cached object is no reason to refuse: read etcd and try again
		}
		if err != nil {
			return nil, err
		}
		if updated == nil { // nothing to change
			return current, nil
		}
		data, err := s.encode(updated)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		// As kube-apiserver's GuaranteedUpdate: an update that changes
		// nothing is not written, and the resourceVersion stays.
		if old, err := s.encode(current.DeepCopyObject()); err == nil && bytes.Equal(old, data) {
			if fromCache {
				if fresh, err := s.get(ctx, namespace, name); err != nil || mustRV(fresh) != rev {
					continue // the cache was behind: start again from etcd
				}
			}
			return current, nil
		}
		resp, err := s.etcd.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, string(data))).Commit()
		if err != nil {
			return nil, etcdError(err)
		}
		if resp.Succeeded {
			setRV(updated, resp.Header.Revision)
			s.wrote(ctx, resp.Header.Revision)
			return updated, nil
		}
		if attempt >= 100 {
			return nil, conflict(s.res, name)
		}
	}
}

// remove deletes the object if it is still at revision rev (any revision when rev is 0).
func (s *store) remove(ctx context.Context, namespace, name string, rev int64) (int64, error) {
	key := s.res.Key(namespace, name)
	cmp := clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	if rev > 0 {
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", rev)
	}
	resp, err := s.etcd.Txn(ctx).If(cmp).Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return 0, etcdError(err)
	}
	if !resp.Succeeded {
		if rev > 0 {
			return 0, conflict(s.res, name)
		}
		return 0, apierrors.NewNotFound(s.res.GroupResource(), name)
	}
	s.wrote(ctx, resp.Header.Revision)
	return resp.Header.Revision, nil
}

func (s *store) wrote(ctx context.Context, rev int64) {
	if s.applied != nil {
		s.applied(ctx, rev)
	}
}

func mustRV(obj runtime.Object) int64 {
	m, _ := meta.Accessor(obj)
	rv, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	return rv
}

// conflict is kube-apiserver's 409 for a stale resourceVersion.
func conflict(res *Resource, name string) error {
	return apierrors.NewConflict(res.GroupResource(), name,
		errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// etcdError turns an etcd failure into the API error kube-apiserver returns.
func etcdError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return apierrors.NewTimeoutError("etcdserver: request timed out", 2)
	}
	if errors.Is(err, context.Canceled) {
		return apierrors.NewTimeoutError("request cancelled", 0)
	}
	return apierrors.NewInternalError(err)
}
