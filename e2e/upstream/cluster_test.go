package upstream

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// bins holds the paths of the binaries the test runs.
type bins struct {
	apiserver, scheduler, controllerManager, kubectl, podtrace string
}

// buildBinaries builds the upstream control plane and kubectl from the
// pinned k8s.io/kubernetes module, and podtrace from this repository. The
// go command's build cache makes every run after the first cheap.
func buildBinaries(t *testing.T, dir string) bins {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
		"k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-scheduler",
		"k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kubectl")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build upstream binaries: %v\n%s", err, out)
	}
	t.Logf("built kube-apiserver, kube-scheduler, kube-controller-manager, kubectl in %s", time.Since(start).Round(time.Second))
	cmd = exec.Command("go", "build", "-o", filepath.Join(dir, "podtrace"), "./cmd/podtrace")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build podtrace: %v\n%s", err, out)
	}
	return bins{apiserver: filepath.Join(dir, "kube-apiserver"), scheduler: filepath.Join(dir, "kube-scheduler"),
		controllerManager: filepath.Join(dir, "kube-controller-manager"), kubectl: filepath.Join(dir, "kubectl"),
		podtrace: filepath.Join(dir, "podtrace")}
}

// freePort returns a loopback port nobody listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd starts an embedded etcd on loopback, as kube-apiserver's test
// server does, with its log in dir.
func startEtcd(t *testing.T, dir string) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "etcd")
	client, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(freePort(t)))
	peer, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(freePort(t)))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	cfg.UnsafeNoFsync = true
	cfg.LogOutputs = []string{filepath.Join(dir, "etcd.log")}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready after 30s")
	}
	go func() {
		for range e.Err() {
		}
	}()
	return client.String()
}

// pki is a CA with the certificates and keys the control plane needs.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPath string
}

func newPKI(t *testing.T, dir string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "podtrace-e2e-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &pki{dir: dir, ca: ca, caKey: key, caPath: filepath.Join(dir, "ca.crt")}
	writePEM(t, p.caPath, "CERTIFICATE", der)
	return p
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// issue writes NAME.crt and NAME.key signed by the CA: a serving
// certificate for 127.0.0.1 when server, else a client certificate for
// user cn in groups.
func (p *pki) issue(t *testing.T, name, cn string, server bool, groups ...string) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: groups},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default.svc"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	crt, k := filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	writePEM(t, crt, "CERTIFICATE", der)
	writePEM(t, k, "EC PRIVATE KEY", keyDER)
	return crt, k
}

// kubeconfig writes NAME.kubeconfig for user cn (in groups) at server.
func (p *pki) kubeconfig(t *testing.T, name, server, cn string, groups ...string) string {
	t.Helper()
	crt, key := p.issue(t, name, cn, false, groups...)
	path := filepath.Join(p.dir, name+".kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: upstream
  cluster: {server: %q, certificate-authority: %q}
users:
- name: %s
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: upstream
  context: {cluster: upstream, user: %s, namespace: default}
current-context: upstream
`, server, p.caPath, name, crt, key, name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serviceAccountKey writes the RSA key that signs service account tokens.
func serviceAccountKey(t *testing.T, dir string) (string, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	priv, pub := filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	writePEM(t, priv, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, pub, "PUBLIC KEY", pubDER)
	return priv, pub
}

// process runs a binary with its output in dir/NAME.log and stops it with
// SIGINT (then SIGKILL) when the test ends.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	out  *bytes.Buffer
}

func startProcess(t *testing.T, dir, name, bin string, stdout io.Writer, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	p := &process{name: name, log: logPath, cmd: exec.Command(bin, args...)}
	p.cmd.Stderr = f
	p.cmd.Stdout = f
	if stdout != nil {
		p.cmd.Stdout = stdout
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		p.stop()
		f.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			if len(data) > 4000 {
				data = data[len(data)-4000:]
			}
			t.Logf("--- tail of %s.log ---\n%s", name, data)
		}
	})
	return p
}

// stop interrupts the process and waits for it.
func (p *process) stop() error {
	if p.cmd.ProcessState != nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("%s did not stop on SIGINT", p.name)
	}
}

// waitHealthy polls an HTTPS /readyz (or /healthz) that trusts the CA.
func waitHealthy(t *testing.T, what, u string, timeout time.Duration) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy at %s after %s: %v", what, u, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cluster is a running upstream control plane.
type cluster struct {
	bins       bins
	dir        string
	kubeconfig string // kubernetes-admin
	auditLog   string
}

// auditPolicy logs writes of pods, replicasets and deployments with their
// response (so generateName pods are named) and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  verbs: [create, update, patch, delete]
  resources:
  - group: ""
    resources: [pods]
  - group: apps
    resources: [replicasets, deployments]
- level: None
`

// startCluster starts etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler, all on loopback.
func startCluster(t *testing.T, b bins) *cluster {
	t.Helper()
	dir := t.TempDir()
	etcdURL := startEtcd(t, dir)
	p := newPKI(t, dir)
	servingCrt, servingKey := p.issue(t, "apiserver", "kube-apiserver", true)
	saKey, saPub := serviceAccountKey(t, dir)
	port := freePort(t)
	server := "https://127.0.0.1:" + strconv.Itoa(port)
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &cluster{bins: b, dir: dir, auditLog: filepath.Join(dir, "audit.log")}
	startProcess(t, dir, "kube-apiserver", b.apiserver, nil,
		"--etcd-servers="+etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port), "--cert-dir="+filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file="+servingCrt, "--tls-private-key-file="+servingKey, "--client-ca-file="+p.caPath,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+saPub, "--service-account-signing-key-file="+saKey,
		"--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=Node,RBAC",
		"--audit-log-path="+c.auditLog, "--audit-policy-file="+policy, "--audit-log-format=json",
		"--audit-log-mode=blocking")
	waitHealthy(t, "kube-apiserver", server+"/readyz", 90*time.Second)
	c.kubeconfig = p.kubeconfig(t, "admin", server, "kubernetes-admin", "system:masters")
	kcm := p.kubeconfig(t, "controller-manager", server, "system:kube-controller-manager")
	sched := p.kubeconfig(t, "scheduler", server, "system:kube-scheduler")
	kcmPort, schedPort := freePort(t), freePort(t)
	startProcess(t, dir, "kube-controller-manager", b.controllerManager, nil,
		"--kubeconfig="+kcm, "--authentication-kubeconfig="+kcm, "--authorization-kubeconfig="+kcm,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(kcmPort), "--leader-elect=false",
		"--service-account-private-key-file="+saKey, "--root-ca-file="+p.caPath,
		"--use-service-account-credentials=true", "--controllers=*")
	startProcess(t, dir, "kube-scheduler", b.scheduler, nil,
		"--kubeconfig="+sched, "--authentication-kubeconfig="+sched, "--authorization-kubeconfig="+sched,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(schedPort), "--leader-elect=false")
	waitHealthy(t, "kube-controller-manager", "https://127.0.0.1:"+strconv.Itoa(kcmPort)+"/healthz", 60*time.Second)
	waitHealthy(t, "kube-scheduler", "https://127.0.0.1:"+strconv.Itoa(schedPort)+"/healthz", 60*time.Second)
	return c
}

// kubectl runs kubectl as kubernetes-admin and returns its stdout.
func (c *cluster) kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bins.kubectl, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// eventually retries f until it succeeds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func execCommand(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }
