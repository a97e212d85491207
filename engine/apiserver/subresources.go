package apiserver

import (
	"fmt"
	"mime"
	"net/http"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/stages"
)

// bind serves POST pods/NAME/binding: spec.nodeName is set once, and
// PodScheduled becomes True, as kube-apiserver's BindingREST does.
func (s *Server) bind(w http.ResponseWriter, r *http.Request, res *Resource, ns, name string, acc accepted) {
	data, err := readBody(r)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	binding := &corev1.Binding{}
	f, err := decoderFor(r)
	if err == nil {
		_, _, err = f.info.Serializer.Decode(data, nil, binding)
	}
	if err != nil {
		writeError(w, acc.format, apierrors.NewBadRequest(fmt.Sprintf("Binding in version \"v1\" cannot be handled as a Binding: %v", err)))
		return
	}
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		writeError(w, acc.format, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, name, nil))
		return
	}
	node := binding.Target.Name
	bindingGR := schema.GroupResource{Resource: "pods/binding"}
	_, err = s.stores[res].update(r.Context(), ns, name, s.hint(res, ns, name), func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(bindingGR, name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", name))
		}
		if binding.UID != "" && binding.UID != pod.UID {
			return nil, apierrors.NewConflict(bindingGR, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", binding.UID, pod.UID))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(bindingGR, name, fmt.Errorf("pod %v is already assigned to node %q", name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = node
		if pod.Annotations == nil && len(binding.Annotations) > 0 {
			pod.Annotations = map[string]string{}
		}
		for k, v := range binding.Annotations {
			pod.Annotations[k] = v
		}
		setPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(s.cfg.Clock.Now().Truncate(1e9))})
		return pod, nil
	})
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	writeObject(w, acc.format, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

func setPodCondition(status *corev1.PodStatus, c corev1.PodCondition) {
	for i := range status.Conditions {
		if status.Conditions[i].Type == c.Type {
			if status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = status.Conditions[i].LastTransitionTime
			}
			status.Conditions[i] = c
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}

// scale serves the scale subresource of deployments and replicasets as an
// autoscaling/v1 Scale.
func (s *Server) scale(w http.ResponseWriter, r *http.Request, res *Resource, ns, name string, acc accepted, rt *requestTrace) {
	if r.Method == http.MethodGet {
		obj, err := s.stores[res].get(r.Context(), ns, name)
		if err != nil {
			writeError(w, acc.format, err)
			return
		}
		writeObject(w, acc.format, http.StatusOK, toScale(obj))
		return
	}
	if r.Method != http.MethodPut && r.Method != http.MethodPatch {
		writeError(w, acc.format, methodNotSupported(res, "scale", r.Method))
		return
	}
	data, err := readBody(r)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	scaleRes := &Resource{GVR: autoscalingv1.SchemeGroupVersion.WithResource("scale"), Kind: "Scale",
		New: func() runtime.Object { return &autoscalingv1.Scale{} }}
	stored, err := s.stores[res].update(r.Context(), ns, name, s.hint(res, ns, name), func(cur runtime.Object) (runtime.Object, error) {
		want := toScale(cur)
		if r.Method == http.MethodPatch {
			if data, err = patchScale(r, want, data, scaleRes); err != nil {
				return nil, err
			}
		}
		obj, _, err := decodeBytes(formats[mediaJSON], "Ignore", scaleRes, data)
		if err != nil {
			return nil, err
		}
		sc := obj.(*autoscalingv1.Scale)
		if sc.ResourceVersion != "" && sc.ResourceVersion != metaRV(cur) {
			return nil, conflict(res, name)
		}
		if sc.Spec.Replicas < 0 {
			return nil, apierrors.NewInvalid(schema.GroupKind{Group: "autoscaling", Kind: "Scale"}, name, nil)
		}
		replicas := sc.Spec.Replicas
		switch o := cur.(type) {
		case *appsv1.Deployment:
			o.Spec.Replicas = &replicas
			o.Generation++
		case *appsv1.ReplicaSet:
			o.Spec.Replicas = &replicas
			o.Generation++
		}
		return cur, nil
	})
	if err != nil {
		s.finish(rt, r, nil)
		writeError(w, acc.format, err)
		return
	}
	s.finish(rt, r, stored) // authn and authz, with who asked
	if res.Traced && s.cfg.Tracer != nil {
		now := s.cfg.Clock.Now()
		s.cfg.Tracer.Record(refOf(res, stored), stages.Persist, "kube-apiserver", now, now, stages.Succeeded, "Scaled",
			fmt.Sprintf("spec.replicas set to %d", toScale(stored).Spec.Replicas), func(e *stages.Event) {
				e.Verb = rt.info.verb
				if rt.user != nil {
					e.User, e.UserAgent = rt.user.Name, rt.agent
				}
			})
	}
	writeObject(w, acc.format, http.StatusOK, toScale(stored))
}

func patchScale(r *http.Request, cur *autoscalingv1.Scale, patch []byte, scaleRes *Resource) ([]byte, error) {
	current, err := runtime.Encode(formats[mediaJSON].info.Serializer, cur)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch pt := types.PatchType(ct); pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
		return applyPatch(pt, current, patch, scaleRes)
	}
	return nil, unsupportedPatch(ct)
}

func toScale(obj runtime.Object) *autoscalingv1.Scale {
	var meta metav1.ObjectMeta
	var replicas, current int32
	var selector *metav1.LabelSelector
	switch o := obj.(type) {
	case *appsv1.Deployment:
		meta, selector, current = o.ObjectMeta, o.Spec.Selector, o.Status.Replicas
		if o.Spec.Replicas != nil {
			replicas = *o.Spec.Replicas
		}
	case *appsv1.ReplicaSet:
		meta, selector, current = o.ObjectMeta, o.Spec.Selector, o.Status.Replicas
		if o.Spec.Replicas != nil {
			replicas = *o.Spec.Replicas
		}
	}
	sel := ""
	if s, err := metav1.LabelSelectorAsSelector(selector); err == nil && s != nil {
		sel = s.String()
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: meta.Name, Namespace: meta.Namespace, UID: meta.UID,
			ResourceVersion: meta.ResourceVersion, CreationTimestamp: meta.CreationTimestamp},
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas},
		Status: autoscalingv1.ScaleStatus{Replicas: current, Selector: sel},
	}
}

// podLog serves pods/NAME/log.
func (s *Server) podLog(w http.ResponseWriter, r *http.Request, ns, name string, acc accepted) {
	pod, err := s.stores[s.resources["/pods"]].get(r.Context(), ns, name)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	p := pod.(*corev1.Pod)
	q := r.URL.Query()
	container, err := validContainer(p, q.Get("container"))
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	if p.Spec.NodeName == "" || s.cfg.PodLogs == nil {
		writeError(w, acc.format, apierrors.NewBadRequest(fmt.Sprintf(
			"container %q in pod %q is waiting to start: ContainerCreating", container, name)))
		return
	}
	tail := int64(-1)
	if t, err := strconv.ParseInt(q.Get("tailLines"), 10, 64); err == nil {
		tail = t
	}
	follow := q.Get("follow") == "true"
	w.Header().Set("Content-Type", "text/plain")
	flusher, _ := w.(http.Flusher)
	started := false
	err = s.cfg.PodLogs(r.Context(), ns, name, container, follow, tail, func(b []byte) error {
		if !started {
			w.WriteHeader(http.StatusOK)
			started = true
		}
		_, err := w.Write(b)
		if flusher != nil {
			flusher.Flush()
		}
		return err
	})
	if err != nil && !started {
		writeError(w, acc.format, err)
		return
	}
	if !started {
		w.WriteHeader(http.StatusOK)
	}
}
