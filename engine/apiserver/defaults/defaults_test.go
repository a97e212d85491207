package defaults

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestImagePullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"registry.local:5000/team/app", corev1.PullAlways},
		{"registry.local:5000/team/app:v2", corev1.PullIfNotPresent},
		{"busybox@sha256:abcdef", corev1.PullIfNotPresent},
		{"busybox:latest@sha256:abcdef", corev1.PullAlways},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: tt.image}}}}
			Default(pod)
			if got := pod.Spec.Containers[0].ImagePullPolicy; got != tt.want {
				t.Errorf("imagePullPolicy for %q = %s, want %s", tt.image, got, tt.want)
			}
		})
	}
}

func TestPodDefaults(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name:  "web",
		Image: "nginx:1.27",
		Ports: []corev1.ContainerPort{{ContainerPort: 80}},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"),
		}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{}}},
	}}}}
	Default(pod)
	s := pod.Spec
	c := s.Containers[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"restartPolicy", s.RestartPolicy, corev1.RestartPolicyAlways},
		{"dnsPolicy", s.DNSPolicy, corev1.DNSClusterFirst},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30)},
		{"securityContext set", s.SecurityContext != nil, true},
		{"enableServiceLinks", *s.EnableServiceLinks, true},
		{"priority", *s.Priority, int32(0)},
		{"preemptionPolicy", *s.PreemptionPolicy, corev1.PreemptLowerPriority},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"port protocol", c.Ports[0].Protocol, corev1.ProtocolTCP},
		{"requests.cpu from limits", c.Resources.Requests.Cpu().String(), "500m"},
		{"probe timeoutSeconds", c.ReadinessProbe.TimeoutSeconds, int32(1)},
		{"probe periodSeconds", c.ReadinessProbe.PeriodSeconds, int32(10)},
		{"probe successThreshold", c.ReadinessProbe.SuccessThreshold, int32(1)},
		{"probe failureThreshold", c.ReadinessProbe.FailureThreshold, int32(3)},
		{"httpGet path", c.ReadinessProbe.HTTPGet.Path, "/"},
		{"httpGet scheme", c.ReadinessProbe.HTTPGet.Scheme, corev1.URISchemeHTTP},
		{"tolerations untouched", len(s.Tolerations), 0},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestPodDefaultsKeepExplicitValues(t *testing.T) {
	grace := int64(5)
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullNever,
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			}}},
	}}
	Default(pod)
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || *pod.Spec.TerminationGracePeriodSeconds != 5 {
		t.Errorf("explicit pod values overwritten: %v %v", pod.Spec.RestartPolicy, *pod.Spec.TerminationGracePeriodSeconds)
	}
	c := pod.Spec.Containers[0]
	if c.ImagePullPolicy != corev1.PullNever || c.Resources.Requests.Cpu().String() != "100m" {
		t.Errorf("explicit container values overwritten: %v %v", c.ImagePullPolicy, c.Resources.Requests.Cpu())
	}
}

func TestDeploymentDefaults(t *testing.T) {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}}}
	Default(d)
	if *d.Spec.Replicas != 1 || *d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Errorf("replicas/revisionHistoryLimit/progressDeadlineSeconds = %d/%d/%d, want 1/10/600",
			*d.Spec.Replicas, *d.Spec.RevisionHistoryLimit, *d.Spec.ProgressDeadlineSeconds)
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		d.Spec.Strategy.RollingUpdate.MaxSurge.String() != "25%" ||
		d.Spec.Strategy.RollingUpdate.MaxUnavailable.String() != "25%" {
		t.Errorf("strategy = %+v, want RollingUpdate 25%%/25%%", d.Spec.Strategy)
	}
	if d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || d.Spec.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("template pod spec not defaulted: %+v", d.Spec.Template.Spec)
	}
	recreate := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}}
	Default(recreate)
	if recreate.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("Recreate strategy got rollingUpdate %+v", recreate.Spec.Strategy.RollingUpdate)
	}
}

func TestReplicaSetNamespaceNodeSecretDefaults(t *testing.T) {
	rs := &appsv1.ReplicaSet{}
	Default(rs)
	if *rs.Spec.Replicas != 1 || rs.Spec.Template.Spec.SchedulerName != "default-scheduler" {
		t.Errorf("replicaset defaults: replicas %d scheduler %q", *rs.Spec.Replicas, rs.Spec.Template.Spec.SchedulerName)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	Default(ns)
	if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != "kubernetes" ||
		ns.Labels["kubernetes.io/metadata.name"] != "team-a" {
		t.Errorf("namespace defaults: %+v", ns)
	}

	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	Default(node)
	if node.Status.Allocatable.Cpu().String() != "4" {
		t.Errorf("node allocatable = %v, want capacity", node.Status.Allocatable)
	}

	secret := &corev1.Secret{}
	Default(secret)
	if secret.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret type = %q, want Opaque", secret.Type)
	}
}

func TestLimitRangeItemDefaults(t *testing.T) {
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer,
		Max:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Min:  corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}}}}
	Default(lr)
	item := lr.Spec.Limits[0]
	if item.Default.Cpu().String() != "2" || item.DefaultRequest.Cpu().String() != "2" || item.DefaultRequest.Memory().String() != "64Mi" {
		t.Errorf("limit range defaults: default %v defaultRequest %v", item.Default, item.DefaultRequest)
	}
}
