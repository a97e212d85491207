package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func running(name string, ready bool) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, Ready: ready, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func exited(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func crashLooping(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name,
		State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}}
}

func waiting(name, reason string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}}
}

func TestPhase(t *testing.T) {
	spec := func(policy v1.RestartPolicy, init ...string) *v1.PodSpec {
		s := &v1.PodSpec{RestartPolicy: policy, Containers: []v1.Container{{Name: "app"}}}
		for _, n := range init {
			s.InitContainers = append(s.InitContainers, v1.Container{Name: n})
		}
		return s
	}
	tests := []struct {
		name          string
		spec          *v1.PodSpec
		init, regular []v1.ContainerStatus
		want          v1.PodPhase
	}{
		{"creating", spec(v1.RestartPolicyAlways), nil, []v1.ContainerStatus{waiting("app", "ContainerCreating")}, v1.PodPending},
		{"running", spec(v1.RestartPolicyAlways), nil, []v1.ContainerStatus{running("app", false)}, v1.PodRunning},
		{"crash loop is Running", spec(v1.RestartPolicyAlways), nil, []v1.ContainerStatus{crashLooping("app")}, v1.PodRunning},
		{"never, exit 1", spec(v1.RestartPolicyNever), nil, []v1.ContainerStatus{exited("app", 1)}, v1.PodFailed},
		{"never, exit 0", spec(v1.RestartPolicyNever), nil, []v1.ContainerStatus{exited("app", 0)}, v1.PodSucceeded},
		{"onfailure, exit 0", spec(v1.RestartPolicyOnFailure), nil, []v1.ContainerStatus{exited("app", 0)}, v1.PodSucceeded},
		{"init running", spec(v1.RestartPolicyAlways, "init"), []v1.ContainerStatus{running("init", false)}, []v1.ContainerStatus{waiting("app", "PodInitializing")}, v1.PodPending},
		{"init failed, never", spec(v1.RestartPolicyNever, "init"), []v1.ContainerStatus{exited("init", 2)}, []v1.ContainerStatus{waiting("app", "PodInitializing")}, v1.PodFailed},
		{"init done", spec(v1.RestartPolicyAlways, "init"), []v1.ContainerStatus{exited("init", 0)}, []v1.ContainerStatus{running("app", true)}, v1.PodRunning},
		{"no statuses", spec(v1.RestartPolicyAlways), nil, nil, v1.PodPending},
	}
	for _, tt := range tests {
		if got := Phase(tt.spec, tt.init, tt.regular); got != tt.want {
			t.Errorf("%s: phase %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestConditions(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "init"}}, Containers: []v1.Container{{Name: "app"}, {Name: "side"}}},
		Status: v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}}}
	init := []v1.ContainerStatus{{Name: "init", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	conds := Conditions(pod, v1.PodPending, true, init, []v1.ContainerStatus{waiting("app", "PodInitializing"), waiting("side", "PodInitializing")})
	want := map[v1.PodConditionType]string{
		v1.PodScheduled:              "True//",
		v1.PodReadyToStartContainers: "True//",
		v1.PodInitialized:            "False/ContainersNotInitialized/containers with incomplete status: [init]",
		v1.PodReady:                  "False/ContainersNotReady/containers with unready status: [app side]",
		v1.ContainersReady:           "False/ContainersNotReady/containers with unready status: [app side]",
	}
	if len(conds) != 5 {
		t.Fatalf("conditions %+v", conds)
	}
	for _, c := range conds {
		if got := string(c.Status) + "/" + c.Reason + "/" + c.Message; got != want[c.Type] {
			t.Errorf("%s: %s, want %s", c.Type, got, want[c.Type])
		}
	}
	init[0] = exited("init", 0)
	init[0].Ready = true
	conds = Conditions(pod, v1.PodRunning, true, init, []v1.ContainerStatus{running("app", true), running("side", true)})
	for _, c := range conds {
		if c.Status != v1.ConditionTrue {
			t.Errorf("%s not True: %+v", c.Type, c)
		}
	}
}

func TestQOSClass(t *testing.T) {
	rl := func(cpu, mem string) v1.ResourceList {
		l := v1.ResourceList{}
		if cpu != "" {
			l[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[v1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	pod := func(req, lim v1.ResourceList) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}}}}
	}
	tests := []struct {
		pod  *v1.Pod
		want v1.PodQOSClass
	}{
		{pod(nil, nil), v1.PodQOSBestEffort},
		{pod(rl("100m", ""), nil), v1.PodQOSBurstable},
		{pod(rl("1", "1Gi"), rl("1", "1Gi")), v1.PodQOSGuaranteed},
		{pod(rl("500m", "1Gi"), rl("1", "1Gi")), v1.PodQOSBurstable},
		{pod(nil, rl("1", "1Gi")), v1.PodQOSGuaranteed},
	}
	for i, tt := range tests {
		if got := QOSClass(tt.pod); got != tt.want {
			t.Errorf("%d: %s, want %s", i, got, tt.want)
		}
	}
	if CgroupPath(v1.PodQOSBurstable, "abc") != "/kubepods/burstable/podabc" || CgroupPath(v1.PodQOSGuaranteed, "abc") != "/kubepods/podabc" {
		t.Fatal("cgroup paths")
	}
}
