// Package api is podtrace's seam in kube-apiserver. It wraps the
// aggregator's authenticator and authorizer (the filter chain that serves
// the port belongs to the aggregator's generic config), the kube API's
// admission chain and the storage of the traced resources (pods,
// replicasets, deployments), and registers the PodTrace admission plugin.
// From there it reports the authn, authz, admission, persist, reconcile and
// delete stages, and it turns faults and breakpoints of those stages into
// what kube-apiserver itself would do: a 401, a 403 in the authorizer's
// words, an admission denial, an etcd error from storage.
package api

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"

	"github.com/podtrace/podtrace/engine/trace"
	"github.com/podtrace/podtrace/stages"
)

// Component is the component named in the events of the API stages.
const Component = "kube-apiserver"

// Hooks installs the seams into one kube-apiserver.
type Hooks struct {
	tr      *trace.Tracer
	backoff controllerBackoff // the controllers' workqueue back-offs after refused creates
}

// New returns hooks that report to tr and take its faults and breakpoints.
func New(tr *trace.Tracer) *Hooks { return &Hooks{tr: tr} }

// Register adds the PodTrace admission plugin to s's plugins, last in the
// recommended order (it validates right before the write), and returns its
// name for --enable-admission-plugins.
func (h *Hooks) Register(s *options.ServerRunOptions) []string {
	ga := s.Admission.GenericAdmission
	ga.Plugins.Register(PluginName, newPlugin(h))
	ga.RecommendedPluginOrder = append(ga.RecommendedPluginOrder, PluginName)
	return []string{PluginName}
}

// Install wraps the seams in c: the request record around the aggregator's
// handler chain, its authenticator and authorizer, the kube API's admission
// chain and its storage.
func (h *Hooks) Install(c *app.Config) {
	agg := &c.Aggregator.GenericConfig.Config
	kube := c.KubeAPIs.ControlPlane.Generic
	build := agg.BuildHandlerChainFunc
	agg.BuildHandlerChainFunc = func(handler http.Handler, cfg *genericapiserver.Config) http.Handler {
		return h.recordRequests(build(handler, cfg), cfg.RequestInfoResolver)
	}
	agg.Authentication.Authenticator = &authenticatorHook{inner: agg.Authentication.Authenticator, h: h}
	agg.Authorization.Authorizer = &authorizerHook{inner: agg.Authorization.Authorizer, h: h}
	kube.AdmissionControl = &admissionHook{inner: kube.AdmissionControl, h: h}
	kube.RESTOptionsGetter = &restOptionsHook{inner: kube.RESTOptionsGetter, h: h}
}

// traced maps the resources whose writes are drawn as lanes to their kind.
var traced = map[schema.GroupResource]string{
	{Group: "", Resource: "pods"}:             stages.KindPod,
	{Group: "apps", Resource: "replicasets"}:  stages.KindReplicaSet,
	{Group: "apps", Resource: "deployments"}:  stages.KindDeployment,
	{Group: "apps", Resource: "statefulsets"}: stages.KindStatefulSet,
	{Group: "apps", Resource: "daemonsets"}:   stages.KindDaemonSet,
	{Group: "batch", Resource: "jobs"}:        stages.KindJob,
	{Group: "batch", Resource: "cronjobs"}:    stages.KindCronJob,
}

// controllerOf returns the controller a kube-controller-manager service
// account belongs to ("replicaset-controller"), or "".
func controllerOf(user string) string {
	const prefix = "system:serviceaccount:kube-system:"
	if name, ok := strings.CutPrefix(user, prefix); ok && strings.HasSuffix(name, "-controller") {
		return name
	}
	return ""
}
