package agnhost

import (
	"fmt"
	"net/http"
	_ "unsafe" // go:linkname, for agnhost webhook's handlers

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/test/images/agnhost/crd-conversion-webhook/converter"
	_ "k8s.io/kubernetes/test/images/agnhost/webhook" // the handlers linked below

	"github.com/podtrace/podtrace/engine/cri/sim/proc"
)

// agnhost webhook's handlers are upstream's own code: the package is a
// cobra command whose handlers are unexported, and its main serves them
// on every address of the host (":port") from http.DefaultServeMux, which
// a simulated pod must not. So the simulation links each handler by name
// and serves it on the pod's address, on the paths main gives them. A
// release that renames one fails to link, not to answer.

//go:linkname serveAlwaysAllowDelayFiveSeconds k8s.io/kubernetes/test/images/agnhost/webhook.serveAlwaysAllowDelayFiveSeconds
func serveAlwaysAllowDelayFiveSeconds(http.ResponseWriter, *http.Request)

//go:linkname serveAlwaysDeny k8s.io/kubernetes/test/images/agnhost/webhook.serveAlwaysDeny
func serveAlwaysDeny(http.ResponseWriter, *http.Request)

//go:linkname serveAddLabel k8s.io/kubernetes/test/images/agnhost/webhook.serveAddLabel
func serveAddLabel(http.ResponseWriter, *http.Request)

//go:linkname servePods k8s.io/kubernetes/test/images/agnhost/webhook.servePods
func servePods(http.ResponseWriter, *http.Request)

//go:linkname serveAttachingPods k8s.io/kubernetes/test/images/agnhost/webhook.serveAttachingPods
func serveAttachingPods(http.ResponseWriter, *http.Request)

//go:linkname serveMutatePods k8s.io/kubernetes/test/images/agnhost/webhook.serveMutatePods
func serveMutatePods(http.ResponseWriter, *http.Request)

//go:linkname serveMutatePodsSidecar k8s.io/kubernetes/test/images/agnhost/webhook.serveMutatePodsSidecar
func serveMutatePodsSidecar(http.ResponseWriter, *http.Request)

//go:linkname serveConfigmaps k8s.io/kubernetes/test/images/agnhost/webhook.serveConfigmaps
func serveConfigmaps(http.ResponseWriter, *http.Request)

//go:linkname serveMutateConfigmaps k8s.io/kubernetes/test/images/agnhost/webhook.serveMutateConfigmaps
func serveMutateConfigmaps(http.ResponseWriter, *http.Request)

//go:linkname serveCustomResource k8s.io/kubernetes/test/images/agnhost/webhook.serveCustomResource
func serveCustomResource(http.ResponseWriter, *http.Request)

//go:linkname serveMutateCustomResource k8s.io/kubernetes/test/images/agnhost/webhook.serveMutateCustomResource
func serveMutateCustomResource(http.ResponseWriter, *http.Request)

//go:linkname serveCRD k8s.io/kubernetes/test/images/agnhost/webhook.serveCRD
func serveCRD(http.ResponseWriter, *http.Request)

// webhookMux is agnhost webhook's paths (test/images/agnhost/webhook's
// main).
func webhookMux() *http.ServeMux {
	mux := http.NewServeMux()
	for path, h := range map[string]http.HandlerFunc{
		"/always-allow-delay-5s":    serveAlwaysAllowDelayFiveSeconds,
		"/always-deny":              serveAlwaysDeny,
		"/add-label":                serveAddLabel,
		"/pods":                     servePods,
		"/pods/attach":              serveAttachingPods,
		"/mutating-pods":            serveMutatePods,
		"/mutating-pods-sidecar":    serveMutatePodsSidecar,
		"/configmaps":               serveConfigmaps,
		"/mutating-configmaps":      serveMutateConfigmaps,
		"/custom-resource":          serveCustomResource,
		"/mutating-custom-resource": serveMutateCustomResource,
		"/crd":                      serveCRD,
		"/readyz":                   readyz,
	} {
		mux.HandleFunc(path, h)
	}
	return mux
}

// crdConversionMux is agnhost crd-conversion-webhook's paths
// (test/images/agnhost/crd-conversion-webhook's main), with upstream's
// exported converter.
func crdConversionMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/crdconvert", converter.ServeExampleConvert)
	mux.HandleFunc("/readyz", readyz)
	return mux
}

// readyz is both webhooks' readiness answer.
func readyz(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }

// admissionServer is agnhost webhook (mux webhookMux) or
// crd-conversion-webhook (crdConversionMux): HTTPS on --port (443) with
// the pair --tls-cert-file and --tls-private-key-file name, which must be
// readable (upstream's exits at once without them). webhook's
// --sidecar-image is accepted and not used: upstream's handler reads it
// from a global of the package, so /mutating-pods-sidecar answers that no
// image was given (no conformance spec calls it).
func (c *cmd) admissionServer(fs *pflag.FlagSet, mux func() *http.ServeMux) func() ([]service, error) {
	certFile := fs.String("tls-cert-file", "", "File containing the default x509 Certificate for HTTPS.")
	keyFile := fs.String("tls-private-key-file", "", "File containing the default x509 private key matching --tls-cert-file.")
	port := fs.Int("port", 443, "Secure port that the webhook listens on")
	return func() ([]service, error) {
		for _, f := range []string{*certFile, *keyFile} {
			if _, err := c.p.FS.ReadFile(f); err != nil {
				return nil, fmt.Errorf("open %s: %s", f, proc.Reason(err))
			}
		}
		tlsConfig, err := c.tlsConfig(*certFile, *keyFile)
		if err != nil {
			return nil, err
		}
		return []service{{port: *port, handler: mux(), tls: tlsConfig}}, nil
	}
}
