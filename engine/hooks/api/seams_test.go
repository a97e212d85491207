package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/waittest"
	"github.com/podtrace/podtrace/stages"
)

const podsPath = "/api/v1/namespaces/team/pods"

// TestPodCreateReportsTheAPIStagesInOrder: a create that passes authn,
// authz, admission and the write shows those stages for that pod, in that
// order, with who made it and the verb; a controller's create also ends
// its reconcile stage with the controller's own event.
func TestPodCreateReportsTheAPIStagesInOrder(t *testing.T) {
	t.Parallel()
	api := []stages.ID{stages.Authn, stages.Authz, stages.Admission, stages.Persist}
	for _, tc := range []struct {
		user string
		want []stages.ID
	}{
		{"alice", api},
		{"system:serviceaccount:kube-system:replicaset-controller", append(slices.Clone(api), stages.Reconcile)},
	} {
		t.Run(tc.user, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			if code, body := s.do(t, http.MethodPost, podsPath, tc.user, podJSON("web")); code != http.StatusCreated {
				t.Fatalf("create answered %d: %s", code, body)
			}
			ended := s.out.ended("web")
			if got := stagesOf(ended); !slices.Equal(got, tc.want) {
				t.Fatalf("stages ended %v, want %v", got, tc.want)
			}
			for _, ev := range ended {
				if ev.Status != stages.Succeeded || ev.Namespace != "team" || ev.User != tc.user || ev.Verb != "create" ||
					ev.UserAgent != "kubectl/v1.36.3" {
					t.Errorf("%s: %s in %q by %q (%q), verb %q; want succeeded in team by %q (kubectl), verb create",
						ev.Stage, ev.Status, ev.Namespace, ev.User, ev.UserAgent, ev.Verb, tc.user)
				}
			}
			if persist := ended[3]; persist.UID == "" || persist.Component != Component {
				t.Errorf("persist has UID %q, component %q; want the stored pod's UID, %s", persist.UID, persist.Component, Component)
			}
			if rc := ended[len(ended)-1]; rc.Stage == stages.Reconcile &&
				(rc.Component != "replicaset-controller" || rc.Reason != "SuccessfulCreate" || rc.Message != "Created pod: web") {
				t.Errorf("reconcile ended by %s: %s %q; want replicaset-controller: SuccessfulCreate \"Created pod: web\"",
					rc.Component, rc.Reason, rc.Message)
			}
		})
	}
}

// TestFaultsAnswerAsKubeAPIServerWould: a fault at an API stage makes the
// create fail with the code and Status message kube-apiserver itself
// gives for that failure, and that stage ends failed with the same words;
// no later stage runs.
func TestFaultsAnswerAsKubeAPIServerWould(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		fault   stages.Fault
		code    int
		reason  string
		message string
		ended   []stages.ID // the last one failed
	}{
		{"authn fails", stages.Fault{Stage: stages.Authn, Kind: stages.Fail}, http.StatusUnauthorized,
			"Unauthorized", "Unauthorized", []stages.ID{stages.Authn}},
		{"authz fails", stages.Fault{Stage: stages.Authz, Kind: stages.Fail}, http.StatusForbidden, "Forbidden",
			`pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "team"`,
			[]stages.ID{stages.Authn, stages.Authz}},
		{"a webhook denies", stages.Fault{Stage: stages.Admission, Kind: stages.Fail}, http.StatusBadRequest, "",
			`admission webhook "deny.podtrace.dev" denied the request: Pod "web" is not allowed by policy`,
			[]stages.ID{stages.Authn, stages.Authz, stages.Admission}},
		{"the quota is exceeded", stages.Fault{Stage: stages.Admission, Kind: stages.Fail, Variant: stages.VariantQuota},
			http.StatusForbidden, "Forbidden",
			`pods "web" is forbidden: exceeded quota: compute-quota, requested: requests.cpu=100m, used: requests.cpu=4, limited: requests.cpu=4`,
			[]stages.ID{stages.Authn, stages.Authz, stages.Admission}},
		{"etcd times out", stages.Fault{Stage: stages.Persist, Kind: stages.Fail}, http.StatusInternalServerError, "",
			"etcdserver: request timed out", []stages.ID{stages.Authn, stages.Authz, stages.Admission, stages.Persist}},
		{"a write conflicts", stages.Fault{Stage: stages.Persist, Kind: stages.Fail, Variant: stages.VariantConflict},
			http.StatusConflict, "Conflict",
			`Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again`,
			[]stages.ID{stages.Authn, stages.Authz, stages.Admission, stages.Persist}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			tc.fault.Scope = stages.Scope{Pod: "team/web"}
			s.tr.Faults.Add(tc.fault)
			code, body := s.do(t, http.MethodPost, podsPath, "alice", podJSON("web"))
			if code != tc.code || body != tc.message {
				t.Errorf("create answered %d %q\nwant %d %q", code, body, tc.code, tc.message)
			}
			ended := s.out.ended("web")
			if got := stagesOf(ended); !slices.Equal(got, tc.ended) {
				t.Fatalf("stages ended %v, want %v", got, tc.ended)
			}
			for _, ev := range ended[:len(ended)-1] {
				if ev.Status != stages.Succeeded {
					t.Errorf("%s ended %s, want succeeded", ev.Stage, ev.Status)
				}
			}
			if last := ended[len(ended)-1]; last.Status != stages.Failed || last.Reason != tc.reason || last.Message != tc.message {
				t.Errorf("%s ended %s: %q %q\nwant failed: %q %q", last.Stage, last.Status, last.Reason, last.Message, tc.reason, tc.message)
			}
			if stored := s.store.stored(); stored != 0 {
				t.Errorf("%d pods were stored, want none", stored)
			}
		})
	}
}

// TestInvalidPodFailsAdmission: a create the pod strategy refuses (no
// containers) is kube-apiserver's 422, and the lane shows admission failed
// with its words.
func TestInvalidPodFailsAdmission(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	const want = `Pod "bad" is invalid: spec.containers: Required value`
	code, body := s.do(t, http.MethodPost, podsPath, "alice", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad"},"spec":{}}`)
	if code != http.StatusUnprocessableEntity || !strings.HasPrefix(body, want) {
		t.Errorf("create answered %d %q\nwant 422 %q", code, body, want)
	}
	ended := s.out.ended("bad")
	if got := stagesOf(ended); !slices.Equal(got, []stages.ID{stages.Authn, stages.Authz, stages.Admission}) {
		t.Fatalf("stages ended %v, want authn, authz, admission", got)
	}
	if last := ended[2]; last.Status != stages.Failed || last.Reason != "Invalid" || !strings.HasPrefix(last.Message, want) {
		t.Errorf("admission ended %s: %q %q, want failed: Invalid %q", last.Status, last.Reason, last.Message, want)
	}
}

// TestAdmissionBreakpointHoldsTheCreate: a breakpoint at admission holds
// the create (no answer, nothing written) until the user continues it;
// then it is written and answered.
func TestAdmissionBreakpointHoldsTheCreate(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.tr.Breaks.Set(stages.Breakpoint{Stage: stages.Admission, Scope: stages.Scope{Pod: "team/held"}})
	answered := make(chan int, 1)
	go func() {
		code, _ := s.do(t, http.MethodPost, podsPath, "alice", podJSON("held"))
		answered <- code
	}()
	held := stages.Held{Pod: "team/held", Stage: stages.Admission}
	waittest.EventuallyEvery(t, fmt.Sprintf("%v held", held), time.Millisecond, 10*time.Second, func() (bool, string) {
		h := s.tr.Breaks.Held()
		return slices.Contains(h, held), fmt.Sprintf("held %v", h)
	})
	select {
	case code := <-answered:
		t.Fatalf("a held create was answered %d", code)
	case <-time.After(50 * time.Millisecond):
	}
	if got := stagesOf(s.out.ended("held")); slices.Contains(got, stages.Persist) || s.store.stored() != 0 {
		t.Fatalf("a held create was written: stages ended %v", got)
	}
	if !s.tr.Breaks.Continue("team/held") {
		t.Fatal("continue found nothing held")
	}
	select {
	case code := <-answered:
		if code != http.StatusCreated {
			t.Fatalf("continued create answered %d, want 201", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("continued create was not answered")
	}
	want := []stages.ID{stages.Authn, stages.Authz, stages.Admission, stages.Persist}
	if got := stagesOf(s.out.ended("held")); !slices.Equal(got, want) {
		t.Errorf("stages ended %v, want %v", got, want)
	}
}

// TestUntracedRequestsAreNotReported: reads, writes of resources podtrace
// does not draw and writes of pod subresources it does not trace produce
// no events, even with a fault armed for every object.
func TestUntracedRequestsAreNotReported(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, podsPath, ""},
		{http.MethodGet, podsPath + "/web", ""},
		{http.MethodPost, "/api/v1/namespaces/team/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"}}`},
		{http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/clusterroles", `{"metadata":{"name":"web"}}`},
		{http.MethodPost, podsPath + "/web/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"}}`},
		{http.MethodPost, "/healthz", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			s.tr.Faults.Add(stages.Fault{Stage: stages.Authz, Kind: stages.Fail})
			if code, body := s.do(t, tc.method, tc.path, "alice", tc.body); code >= http.StatusBadRequest {
				t.Errorf("answered %d: %s", code, body)
			}
			if evs := s.out.all(); len(evs) != 0 {
				t.Errorf("reported %d events, want none: %+v", len(evs), evs)
			}
		})
	}
}

// TestRefusedControllerCreatesRetry: a reconcile fault on a controller's
// create fails it where that failure happens in kube-apiserver (RBAC,
// ResourceQuota, etcd), and the controller's reconcile stage retries with
// its own FailedCreate event; a refused create waits out the controller's
// workqueue back-off (5ms the first time) before the next try.
func TestRefusedControllerCreatesRetry(t *testing.T) {
	t.Parallel()
	const rsController = "system:serviceaccount:kube-system:replicaset-controller"
	owned := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","ownerReferences":[{"apiVersion":"apps/v1",` +
		`"kind":"ReplicaSet","name":"shop-1","uid":"uid-shop-1","controller":true}]},` +
		`"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}`
	for _, tc := range []struct {
		variant string
		code    int
		failed  stages.ID
		message string
		backoff bool // the refusal reached the controller's workqueue back-off
	}{
		{stages.VariantForbidden, http.StatusForbidden, stages.Authz,
			`pods is forbidden: User "` + rsController + `" cannot create resource "pods" in API group "" in the namespace "team"`, true},
		{stages.VariantQuota, http.StatusForbidden, stages.Admission,
			`pods "web" is forbidden: exceeded quota: podtrace-fault, requested: count/pods=1, used: count/pods=0, limited: count/pods=0`, true},
		{stages.VariantEtcdTimeout, http.StatusInternalServerError, stages.Persist, "etcdserver: request timed out", false},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			s.tr.Faults.Add(stages.Fault{Stage: stages.Reconcile, Kind: stages.Fail, Variant: tc.variant,
				Scope: stages.Scope{Pod: "team/web"}})
			if code, body := s.do(t, http.MethodPost, podsPath, rsController, owned); code != tc.code || body != tc.message {
				t.Errorf("create answered %d %q\nwant %d %q", code, body, tc.code, tc.message)
			}
			ended := s.out.ended("web")
			if last := ended[len(ended)-1]; last.Stage != tc.failed || last.Status != stages.Failed || last.Message != tc.message {
				t.Errorf("last ended %s %s %q, want %s failed %q", last.Stage, last.Status, last.Message, tc.failed, tc.message)
			}
			var retry *stages.Event
			for _, ev := range s.out.all() {
				if ev.Pod == "web" && ev.Stage == stages.Reconcile && ev.Status == stages.Retrying {
					retry = &ev
				}
			}
			switch {
			case retry == nil:
				t.Fatal("the reconcile stage did not retry")
			case retry.Component != "replicaset-controller" || retry.Reason != "FailedCreate" || retry.Message != "Error creating: "+tc.message:
				t.Errorf("reconcile retried by %s: %s %q\nwant replicaset-controller: FailedCreate %q",
					retry.Component, retry.Reason, retry.Message, "Error creating: "+tc.message)
			case tc.backoff && (retry.NextTry == nil || retry.NextTry.Sub(retry.Time) != 5*time.Millisecond):
				t.Errorf("next try %v after %v, want 5ms later", retry.NextTry, retry.Time)
			}
		})
	}
}

// TestAnonymousCreateFailsAuthn: a create without credentials is
// kube-apiserver's own 401, and the pod's lane shows authn failed.
func TestAnonymousCreateFailsAuthn(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	if code, body := s.do(t, http.MethodPost, podsPath, "", podJSON("web")); code != http.StatusUnauthorized || body != "Unauthorized" {
		t.Errorf("create answered %d %q, want 401 \"Unauthorized\"", code, body)
	}
	ended := s.out.ended("web")
	if len(ended) != 1 || ended[0].Stage != stages.Authn || ended[0].Status != stages.Failed || ended[0].Reason != "Unauthorized" {
		t.Errorf("ended %+v, want authn failed: Unauthorized", ended)
	}
}
