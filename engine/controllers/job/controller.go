// Package job is podtrace's Job controller: it runs each batch/v1 Job's pods
// to completion as pkg/controller/job of Kubernetes 1.36 does for
// NonIndexed Jobs. It creates up to parallelism pods (never more than the
// completions left) with the batch.kubernetes.io/job-tracking finalizer,
// counts each finished pod once through status.uncountedTerminatedPods
// before removing the finalizer, backs off after failures (10 s doubling,
// capped at 10 min), and finishes the Job with SuccessCriteriaMet then
// Complete, or FailureTarget then Failed (BackoffLimitExceeded,
// DeadlineExceeded). It honours suspend. Indexed completion,
// podFailurePolicy, successPolicy and backoffLimitPerIndex are refused by
// the API server's validation, so they never reach it.
package job

import (
	"context"
	"fmt"

	batch "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/podtrace/podtrace/engine/controllers/controllerutil"
)

// Component is the controller's event source and stage component.
const Component = "job-controller"

// DefaultUser is the controller's identity (docs/architecture.md).
const DefaultUser = "system:serviceaccount:kube-system:job-controller"

// KindJob is the kind of a Job's lane in stage events.
const KindJob = "Job"

// TrackingFinalizer holds a Job's pod until the controller has counted it.
const TrackingFinalizer = batch.JobTrackingFinalizer

// managedBy is the spec.managedBy value (or nil) of the Jobs this
// controller runs; Jobs managed by another controller are left alone.
const managedBy = "kubernetes.io/job-controller"

var controllerKind = batch.SchemeGroupVersion.WithKind("Job")

// Config configures a Controller: Client talks as the job-controller (User
// is DefaultUser when empty), Clock times back-offs, deadlines and
// timestamps, the Tracer gates pod creation.
type Config = controllerutil.Config

// Controller is the Job controller.
type Controller struct {
	cfg          Config
	clock        clock.WithTicker
	expectations *controllerutil.Expectations
	backoff      *backoffStore
	finalizing   *uidSet
	queue        *controllerutil.Queue
	recorder     record.EventRecorder
	jobLister    batchlisters.JobLister
	podLister    corelisters.PodLister
}

// New checks cfg and returns a controller; Start runs it.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.WithDefaults(DefaultUser)
	if err != nil {
		return nil, fmt.Errorf("job controller: %w", err)
	}
	return &Controller{
		cfg:          cfg,
		clock:        cfg.Clock,
		expectations: controllerutil.NewExpectations(cfg.Clock),
		backoff:      newBackoffStore(),
		finalizing:   newUIDSet(),
		queue:        cfg.NewQueue("job", Component),
	}, nil
}

// Start starts the informers and the workers and returns; they stop when
// ctx is done. Workers begin once the caches have synced.
func (c *Controller) Start(ctx context.Context) error {
	factory := c.cfg.InformerFactory()
	jobInformer := factory.Batch().V1().Jobs()
	podInformer := factory.Core().V1().Pods()
	c.jobLister, c.podLister = jobInformer.Lister(), podInformer.Lister()
	if _, err := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueJob,
		UpdateFunc: func(_, cur interface{}) { c.enqueueJob(cur) },
		DeleteFunc: c.deleteJob,
	}); err != nil {
		return fmt.Errorf("job controller: watch jobs: %w", err)
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: func(_, cur interface{}) { c.podChanged(cur) },
		DeleteFunc: c.deletePod,
	}); err != nil {
		return fmt.Errorf("job controller: watch pods: %w", err)
	}
	c.recorder = controllerutil.NewRecorder(ctx, c.cfg.Client, Component, c.clock)
	c.queue.Start(ctx, factory, c.cfg.Workers, c.syncJob,
		jobInformer.Informer().HasSynced, podInformer.Informer().HasSynced)
	return nil
}

// HasSynced reports whether the informers' caches are filled.
func (c *Controller) HasSynced() bool { return c.queue.HasSynced() }

func (c *Controller) enqueueJob(obj interface{}) {
	if j, ok := obj.(*batch.Job); ok {
		c.queue.Enqueue(j)
	}
}

func (c *Controller) deleteJob(obj interface{}) {
	j, ok := controllerutil.Unwrap(obj).(*batch.Job)
	if !ok {
		return
	}
	key := controllerutil.KeyOf(j)
	c.expectations.Delete(key)
	c.backoff.forget(key)
	c.queue.Enqueue(j) // its pods' finalizers must go
}

// jobKeyOf returns the key of the Job controlling pod, or "".
func jobKeyOf(pod *v1.Pod) string {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != controllerKind.Kind || ref.APIVersion != controllerKind.GroupVersion().String() {
		return ""
	}
	return pod.Namespace + "/" + ref.Name
}

func (c *Controller) addPod(obj interface{}) {
	pod := obj.(*v1.Pod)
	if key := jobKeyOf(pod); key != "" {
		c.expectations.CreationObserved(key)
		c.queue.Add(key)
	}
}

func (c *Controller) podChanged(obj interface{}) {
	pod := obj.(*v1.Pod)
	if !hasFinalizer(pod) {
		c.finalizing.remove(pod.UID)
	}
	if key := jobKeyOf(pod); key != "" {
		if pod.DeletionTimestamp != nil { // a graceful deletion counts as observed
			c.expectations.DeletionObserved(key, controllerutil.PodKey(pod))
		}
		c.queue.Add(key)
	}
}

func (c *Controller) deletePod(obj interface{}) {
	pod, ok := controllerutil.Unwrap(obj).(*v1.Pod)
	if !ok {
		return
	}
	c.finalizing.remove(pod.UID)
	if key := jobKeyOf(pod); key != "" {
		c.expectations.DeletionObserved(key, controllerutil.PodKey(pod))
		c.queue.Add(key)
	}
}
