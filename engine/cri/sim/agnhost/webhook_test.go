package agnhost

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	certutil "k8s.io/client-go/util/cert"

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// webhookFS is a container with the e2e specs' webhook certificate
// mounted where they mount it.
func webhookFS(t *testing.T) *proc.FS {
	dir := t.TempDir()
	cert, key, err := certutil.GenerateSelfSignedCertKey("e2e-test-webhook", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tls.crt": cert, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return proc.NewFS([]proc.Mount{{ContainerPath: "/webhook.local.config/certificates", HostPath: dir, ReadOnly: true}}, false)
}

// post sends body as JSON over HTTPS to the pod's port, as kube-apiserver
// calls a webhook, and decodes the answer into out.
func post(t *testing.T, n *loopNet, port int, path string, body, out any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Post("https://"+n.addr("tcp", port)+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(got, out); err != nil {
		t.Fatalf("%s answered %d %q: %v", path, resp.StatusCode, got, err)
	}
}

var webhookArgs = []string{"--tls-cert-file=/webhook.local.config/certificates/tls.crt",
	"--tls-private-key-file=/webhook.local.config/certificates/tls.key", "--alsologtostderr", "-v=4", "--port=8444"}

func TestAgnhostWebhookAnswersAsUpstreams(t *testing.T) {
	n, _ := startPod(t, webhookFS(t), "registry.k8s.io/e2e-test-images/agnhost:2.63.0", nil, 1,
		append([]string{"/agnhost", "webhook"}, webhookArgs...)...)
	if got := ask(t, n, "https", 8444, "/readyz"); got != "200 ok" {
		t.Errorf("/readyz: %s", got)
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "0a1b", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`)}},
	}
	var answer admissionv1.AdmissionReview
	post(t, n, 8444, "/always-deny", review, &answer)
	if r := answer.Response; r == nil || r.UID != "0a1b" || r.Allowed || r.Result == nil || r.Result.Message != "this webhook denies all requests" {
		t.Errorf("/always-deny answered %+v", r)
	}
}

func TestAgnhostCRDConversionWebhookConverts(t *testing.T) {
	n, _ := startPod(t, webhookFS(t), "registry.k8s.io/e2e-test-images/agnhost:2.63.0", nil, 1,
		append([]string{"/agnhost", "crd-conversion-webhook"}, webhookArgs...)...)
	review := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: "c0", DesiredAPIVersion: "stable.example.com/v2", Objects: []runtime.RawExtension{
			{Raw: []byte(`{"apiVersion":"stable.example.com/v1","kind":"E2e-test-crd-webhook-1234-crd","metadata":{"name":"cr"},"hostPort":"localhost:8080"}`)}}},
	}
	var answer apiextensionsv1.ConversionReview
	post(t, n, 8444, "/crdconvert", review, &answer)
	if r := answer.Response; r == nil || r.UID != "c0" || r.Result.Status != metav1.StatusSuccess || len(r.ConvertedObjects) != 1 {
		t.Fatalf("/crdconvert answered %+v", r)
	}
	var cr map[string]any
	if err := json.Unmarshal(answer.Response.ConvertedObjects[0].Raw, &cr); err != nil {
		t.Fatal(err)
	}
	if cr["apiVersion"] != "stable.example.com/v2" || cr["host"] != "localhost" || cr["port"] != "8080" || cr["hostPort"] != nil {
		t.Errorf("converted to %v, want v2 with host localhost and port 8080", cr)
	}
}

// Without its certificate the webhook does not start (upstream's exits).
func TestAgnhostWebhookNeedsItsCertificate(t *testing.T) {
	var stderr strings.Builder
	code, err := proc.Run(context.Background(), proc.Process{Programs: Programs(), Argv: []string{"/agnhost", "webhook", "--tls-cert-file=/missing.crt", "--tls-private-key-file=/missing.key"},
		FS: container(t), Stdout: io.Discard, Stderr: &stderr, Image: "registry.k8s.io/e2e-test-images/agnhost:2.63.0", Net: newLoopNet()})
	if err != nil || code != 1 || !strings.Contains(stderr.String(), "open /missing.crt: No such file or directory") {
		t.Errorf("exit %d (%v), %q; want 1 and the missing file", code, err, stderr.String())
	}
}
