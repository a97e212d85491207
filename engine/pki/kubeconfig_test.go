package pki

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestWriteKubeconfigLoads(t *testing.T) {
	b := mustEnsure(t, t.TempDir())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := b.WriteKubeconfig(path, "https://127.0.0.1:6443"); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode = %v, want 0600", info.Mode().Perm())
	}

	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("clientcmd.LoadFromFile: %v", err)
	}
	if cfg.CurrentContext != AdminContext {
		t.Errorf("current context = %q, want %q", cfg.CurrentContext, AdminContext)
	}
	tests := []struct {
		context, user, namespace string
		cert                     []byte
	}{
		{AdminContext, "kubernetes-admin", "", b.AdminCertPEM},
		{ViewerContext, "viewer", "default", b.ViewerCertPEM},
	}
	for _, tt := range tests {
		ctx, ok := cfg.Contexts[tt.context]
		if !ok {
			t.Errorf("context %q missing", tt.context)
			continue
		}
		if ctx.Cluster != ClusterName || ctx.AuthInfo != tt.user || ctx.Namespace != tt.namespace {
			t.Errorf("context %q = cluster %q user %q ns %q, want %q %q %q", tt.context, ctx.Cluster, ctx.AuthInfo, ctx.Namespace, ClusterName, tt.user, tt.namespace)
		}
		if !bytes.Equal(cfg.AuthInfos[tt.user].ClientCertificateData, tt.cert) {
			t.Errorf("user %q does not embed its client certificate", tt.user)
		}
	}
	if got := cfg.Clusters[ClusterName]; got == nil || got.Server != "https://127.0.0.1:6443" || !bytes.Equal(got.CertificateAuthorityData, b.CAPEM) {
		t.Errorf("cluster %q = %+v, want server and CA data", ClusterName, got)
	}

	// The rest.Config client-go builds from it must carry the credentials.
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, ViewerContext, nil, nil).ClientConfig()
	if err != nil {
		t.Fatalf("rest config for viewer: %v", err)
	}
	if !bytes.Equal(rc.TLSClientConfig.CertData, b.ViewerCertPEM) || rc.Host != "https://127.0.0.1:6443" {
		t.Errorf("viewer rest config host %q, cert embedded %v", rc.Host, bytes.Equal(rc.TLSClientConfig.CertData, b.ViewerCertPEM))
	}
}

func TestKubeconfigWithKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	b := mustEnsure(t, t.TempDir())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := b.WriteKubeconfig(path, "https://127.0.0.1:6443"); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", path}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run("config", "current-context"); got != AdminContext {
		t.Errorf("kubectl config current-context = %q, want %q", got, AdminContext)
	}
	contexts := run("config", "get-contexts", "-o", "name")
	if contexts != "podtrace-admin\npodtrace-viewer" {
		t.Errorf("kubectl config get-contexts -o name = %q", contexts)
	}
	view := run("config", "view", "--minify", "--context", ViewerContext, "-o", "jsonpath={.contexts[0].context.user}/{.contexts[0].context.namespace}/{.clusters[0].name}/{.clusters[0].cluster.server}")
	if view != "viewer/default/podtrace/https://127.0.0.1:6443" {
		t.Errorf("kubectl config view --minify (viewer) = %q", view)
	}
	if full := run("config", "view"); !strings.Contains(full, "client-certificate-data: DATA+OMITTED") {
		t.Errorf("kubectl config view does not show embedded client certs:\n%s", full)
	}
}

func TestKubeconfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		server  string
		current string
		users   []KubeconfigUser
		want    string
	}{
		{"no server", "", "a", []KubeconfigUser{{Name: "u", Context: "a", Token: "t"}}, "empty server"},
		{"no credentials", "https://x", "a", []KubeconfigUser{{Name: "u", Context: "a"}}, "no credentials"},
		{"unknown current", "https://x", "b", []KubeconfigUser{{Name: "u", Context: "a", Token: "t"}}, "current context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Kubeconfig(tt.server, nil, tt.current, tt.users...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want containing %q", err, tt.want)
			}
		})
	}
}
