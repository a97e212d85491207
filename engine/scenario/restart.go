package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/kubectl/pkg/polymorphichelpers"

	"github.com/podtrace/podtrace/engine"
)

// Restart is a fix's last step, as `kubectl rollout restart
// deployment/NAME`: the pod template gets kubectl's restartedAt annotation,
// so the Deployment rolls out new pods. A pod a kubelet keeps failing on its
// own back-off (a volume it retries mounting, doubling from 0.5s to 2m2s)
// is then replaced at once.
type Restart struct {
	// Namespace is the goal's; Deployment the name restarted.
	Namespace, Deployment string
}

// restart checks fix.restart ("deployment/NAME"); nil when the file has none.
func (p parser) restart(s, namespace string) (*Restart, error) {
	if s == "" {
		return nil, nil
	}
	kind, name, ok := strings.Cut(s, "/")
	if !ok || (kind != "deployment" && kind != "deployments" && kind != "deploy") || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, p.errorf([]any{"fix", "restart"}, "%q: want deployment/NAME", s)
	}
	return &Restart{Namespace: namespace, Deployment: name}, nil
}

// Kubectl is the kubectl command line that does it.
func (r *Restart) Kubectl() string {
	ns := ""
	if r.Namespace != "default" {
		ns = " -n " + r.Namespace
	}
	return "kubectl rollout restart deployment/" + r.Deployment + ns
}

// Run restarts the Deployment as kubectl rollout restart does: its
// restarter sets the annotation, the change goes as a strategic merge patch.
func (r *Restart) Run(ctx context.Context, e *engine.Engine) error {
	deployments := e.AdminClient().AppsV1().Deployments(r.Namespace)
	d, err := deployments.Get(ctx, r.Deployment, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("rollout restart: %w", err)
	}
	before, err := json.Marshal(d)
	if err != nil {
		return err
	}
	after, err := polymorphichelpers.ObjectRestarterFn(d.DeepCopy())
	if err != nil {
		return fmt.Errorf("rollout restart deployment/%s: %w", r.Deployment, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, appsv1.Deployment{})
	if err != nil {
		return fmt.Errorf("rollout restart deployment/%s: %w", r.Deployment, err)
	}
	if _, err := deployments.Patch(ctx, r.Deployment, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: "kubectl-rollout"}); err != nil {
		return fmt.Errorf("rollout restart deployment/%s: %w", r.Deployment, err)
	}
	return nil
}
