package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// Messages in the words of Kubernetes v1.36.3, containerd and the
// simulated runtime (engine/cri/sim, engine/hooks/cri).
const (
	// The kubelet's Failed event on the simulated runtime's NotFound
	// (image_manager.go: "Failed to pull image %q: %v").
	msgPullNotFound = `Failed to pull image "nginx:1.277": rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.277": failed to resolve reference "docker.io/library/nginx:1.277": docker.io/library/nginx:1.277: not found`
	// The pull stage's own message: the CRI error (a pull fault, variant unauthorized).
	msgPullDenied = `rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/acme/private:1.0": failed to resolve reference "docker.io/acme/private:1.0": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed`
	// The simulated runtime's unreachable registry.
	msgPullNoHost = `Failed to pull image "registry.example.com/team/payments-api:v2.14.3": rpc error: code = Unknown desc = failed to pull and unpack image "registry.example.com/team/payments-api:v2.14.3": failed to resolve reference "registry.example.com/team/payments-api:v2.14.3": failed to do request: Head "https://registry.example.com/v2/team/payments-api/manifests/v2.14.3": dial tcp: lookup registry.example.com: no such host`
	// A container's waiting message in ImagePullBackOff.
	msgPullBackOff = `Back-off pulling image "nginx:1.277": ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:1.277": failed to resolve reference "docker.io/library/nginx:1.277": docker.io/library/nginx:1.277: not found`
	// ResourceQuota admission, as the ReplicaSet controller's FailedCreate words it.
	msgQuota = `Error creating: pods "shop-7d9c5b8f4-x2x9k" is forbidden: exceeded quota: compute-resources, requested: requests.cpu=500m, used: requests.cpu=1800m, limited: requests.cpu=2`
	// The authorizer's refusal (responsewriters.forbiddenMessage).
	msgRBAC = `pods is forbidden: User "system:serviceaccount:shop:deployer" cannot create resource "pods" in API group "" in the namespace "shop"`
	// The scheduler's FitError with the default preemption's PostFilter message.
	msgSchedule  = `0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.`
	msgSchedule2 = `0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s). preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.`
	// The kubelet's FailedMount (operation_executor.go generateVolumeMsg).
	msgMount = `MountVolume.SetUp failed for volume "settings" : configmap "shop-frontend-settings" not found`
	// A start fault's CRI error (engine/hooks/cri startError) in the kubelet's "Error: " event.
	msgStart = `Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: "/docker-entrypoint.sh": executable file not found in $PATH: unknown`
	// A cni fault: the kubelet's FailedCreatePodSandBox on the bridge plugin's error.
	msgSandbox = `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "3f2a9c0d1e4b5a6978c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2": plugin type="bridge" name="podtrace" failed (add): failed to allocate for range 0: no IP addresses available in range set: 10.244.1.1-10.244.1.254`
)

// At each width the cause keeps what matters, in upstream's words, in no
// more cells than the width, with "…" where it was cut.
func TestCutCauseKeepsTheMeaning(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       [4]string // at 20, 30, 40 and 60 cells
	}{
		{"pull: the image and why", msgPullNotFound, [4]string{
			`"nginx:1.277": not…`,
			`image "nginx:1.277": not found`,
			`image "nginx:1.277": not found`,
			`Failed to pull image "nginx:1.277": not found`}},
		{"pull stage: the CRI error", msgPullDenied, [4]string{
			`"acme/private:1.0"…`,
			`"acme/private:1.0": pull…`,
			`"acme/private:1.0": pull access denied`,
			`image "acme/private:1.0": pull access denied`}},
		{"pull: a long image cut in its middle", msgPullNoHost, [4]string{
			`"registr…i:v2.14.3"…`,
			`"regist…v2.14.3": no such host`,
			`image "registr…pi:v2.14.3": no such host`,
			`image "registry.exampl…m/payments-api:v2.14.3": no such host`}},
		{"ImagePullBackOff: the image, and the pull's failure", msgPullBackOff, [4]string{
			`"nginx:1.277": not…`,
			`image "nginx:1.277": not found`,
			`image "nginx:1.277": not found`,
			`Back-off pulling image "nginx:1.277": not found`}},
		{"quota: its name", msgQuota, [4]string{
			`quota: compute-reso…`,
			`quota: compute-resources`,
			`exceeded quota: compute-resources`,
			`exceeded quota: compute-resources`}},
		{"quota with the reason: the reason goes first", "FailedCreate: " + msgQuota, [4]string{
			`quota: compute-reso…`,
			`quota: compute-resources`,
			`exceeded quota: compute-resources`,
			`FailedCreate: exceeded quota: compute-resources`}},
		{"RBAC: the user, then the verb", msgRBAC, [4]string{
			`"system:…:deployer"…`,
			`"system…eployer" cannot create`,
			`"system:…:deployer" cannot create "pods"`,
			`"system:serviceaccount:shop:deployer" cannot create "pods"`}},
		{"FailedScheduling: the nodes' reasons", "FailedScheduling: " + msgSchedule, [4]string{
			`3 Insufficient cpu`,
			`3 Insufficient cpu`,
			`FailedScheduling: 3 Insufficient cpu`,
			`0/3 nodes are available: 3 Insufficient cpu`}},
		{"FailedScheduling: several reasons, in order", msgSchedule2, [4]string{
			`1 Insufficient cpu…`,
			`1 Insufficient cpu, 2 node(s)…`,
			`1 Insufficient cpu, 2 node(s) had…`,
			`1 Insufficient cpu, 2 node(s) had untolerated taint(s)`}},
		{"FailedMount: what is not found", "FailedMount: " + msgMount, [4]string{
			`configmap "sho…ngs"…`,
			`configmap "shop-fr…-settings"…`,
			`configmap "shop-fr…d-settings" not found`,
			`FailedMount: configmap "shop-frontend-settings" not found`}},
		{"FailedMount: a short name stays whole", `MountVolume.SetUp failed for volume "settings" : configmap "cfg" not found`, [4]string{
			`configmap "cfg" not…`,
			`configmap "cfg" not found`,
			`configmap "cfg" not found`,
			`configmap "cfg" not found`}},
		{"an error chain: its end, with the name in it", msgStart, [4]string{
			`…exec: "/doc…nt.sh"…`,
			`…exec: "/docker-…trypoint.sh"…`,
			`…exec: "/docker-entrypoint.sh"…`,
			`…exec: "/docker-entrypoint.sh": executable file not found…`}},
		{"an error chain: an address stays with its words", msgSandbox, [4]string{
			`…no IP addresses…`,
			`…no IP addresses available in…`,
			`…no IP addresses available in range…`,
			`…no IP addresses available in range set…`}},
	} {
		for i, w := range []int{20, 30, 40, 60} {
			got := cutCause(tc.text, w)
			if got != tc.want[i] {
				t.Errorf("%s at %d cells:\n got %s\nwant %s", tc.name, w, got, tc.want[i])
			}
			if ansi.StringWidth(got) > w {
				t.Errorf("%s at %d cells: %q is %d cells", tc.name, w, got, ansi.StringWidth(got))
			}
		}
	}
}

// Whatever the width, a cause never takes more cells than it has and is
// left alone when it fits; wide characters count as two cells.
func TestCutCauseNeverExceedsTheWidth(t *testing.T) {
	texts := []string{msgPullNotFound, msgPullDenied, msgPullNoHost, msgPullBackOff, msgQuota, msgRBAC,
		msgSchedule, msgSchedule2, msgMount, msgStart, msgSandbox,
		`Liveness probe failed: Get "http://10.244.1.7:8080/healthz": dial tcp 10.244.1.7:8080: connect: connection refused`,
		`Back-off restarting failed container app in pod web-7d9c5b8f4-2xk9p_default(0f8e2b1c-5d7a-4c3e-9b6f-2a1d8e7c4b3a)`,
		`configmap "設定-ファイル-フロントエンド" not found`,
		`Error: 容器 "ウェブ" の起動に失敗しました: exec: "/入口.sh": 見つかりません`,
		"held before sandbox",
	}
	for _, text := range texts {
		for w := 0; w <= 90; w++ {
			got := cutCause(text, w)
			gw := ansi.StringWidth(got)
			switch {
			case gw > w:
				t.Fatalf("%q at %d cells: %q is %d cells", text, w, got, gw)
			case ansi.StringWidth(text) <= w && got != text:
				t.Fatalf("%q fits %d cells but became %q", text, w, got)
			}
		}
	}
}

// The pod rows cut their cause with it: at 80 columns the pod that cannot
// pull names its image, where the start of the message said only "Failed
// to pull".
func TestRowCauseNamesTheImage(t *testing.T) {
	m, _, _ := fixture(80, 24, "dark")
	row := rowOf(m.Render(), "web-7d9c5b8f4-8mzq1")
	if !strings.Contains(row, `"nginx:1.277"`) {
		t.Errorf("the row of the pod that cannot pull does not name its image: %q", row)
	}
}
