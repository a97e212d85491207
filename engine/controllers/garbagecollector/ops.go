package garbagecollector

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	batchclient "k8s.io/client-go/kubernetes/typed/batch/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
)

// objectOps are the API calls the collector makes on one kind.
type objectOps struct {
	get    func(ctx context.Context, ns, name string) (metav1.Object, error)
	delete func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error
	patch  func(ctx context.Context, ns, name string, pt types.PatchType, data []byte) error
}

// typedClient is what client-go's typed clients for one kind have in common.
type typedClient[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// opsFor turns a kind's namespaced typed client into objectOps.
func opsFor[T metav1.Object, C typedClient[T]](in func(ns string) C) objectOps {
	return objectOps{
		get: func(ctx context.Context, ns, name string) (metav1.Object, error) {
			return in(ns).Get(ctx, name, metav1.GetOptions{})
		},
		delete: func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
			return in(ns).Delete(ctx, name, opts)
		},
		patch: func(ctx context.Context, ns, name string, pt types.PatchType, data []byte) error {
			_, err := in(ns).Patch(ctx, name, pt, data, metav1.PatchOptions{})
			return err
		},
	}
}

func deploymentOps(c appsclient.AppsV1Interface) objectOps {
	return opsFor(func(ns string) appsclient.DeploymentInterface { return c.Deployments(ns) })
}

func replicaSetOps(c appsclient.AppsV1Interface) objectOps {
	return opsFor(func(ns string) appsclient.ReplicaSetInterface { return c.ReplicaSets(ns) })
}

func podOps(c coreclient.CoreV1Interface) objectOps {
	return opsFor(func(ns string) coreclient.PodInterface { return c.Pods(ns) })
}

func jobOps(c batchclient.BatchV1Interface) objectOps {
	return opsFor(func(ns string) batchclient.JobInterface { return c.Jobs(ns) })
}
