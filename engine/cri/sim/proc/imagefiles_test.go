package proc

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"testing"
)

const kittenImage = "registry.k8s.io/e2e-test-images/kitten:1.8"

// An image volume shows its image's files at its mount path, as the
// ImageVolume spec reads kitten's: data.json naming kitten.jpg and
// Alpine's os-release. An image the simulation knows no files of is an
// empty directory.
func TestImageVolume(t *testing.T) {
	fsys := NewFS([]Mount{{ContainerPath: "/volume", Image: kittenImage, ReadOnly: true},
		{ContainerPath: "/empty", Image: "docker.io/library/busybox:1.36", ReadOnly: true}}, false)
	for _, tc := range []struct {
		argv []string
		code int
		want string
	}{
		{[]string{"/bin/cat", "/volume/data.json"}, 0, `"image": "kitten.jpg"`},
		{[]string{"/bin/cat", "/volume/etc/os-release"}, 0, "Alpine Linux"},
		{[]string{"ls", "/volume"}, 0, "data.json\netc\nkitten.jpg\nlocalhost.crt\nlocalhost.key\n"},
		{[]string{"ls", "/empty"}, 0, ""},
		{[]string{"cat", "/data.json"}, 1, ""}, // the container's own image (none here) has no data.json
	} {
		code, out, _ := run(t, fsys, true, tc.argv...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%q: exit %d, %q; want %d, %q", tc.argv, code, out, tc.code, tc.want)
		}
	}
}

// agnhost's image has upstream's /localhost.crt and /localhost.key
// (porter's): a pair for 127.0.0.1 and ::1 from "Acme Co", the same in
// every container, as a client that pins it expects.
func TestAgnhostImageHasUpstreamsCertificate(t *testing.T) {
	fsys := NewFS(nil, false).WithImage("registry.k8s.io/e2e-test-images/agnhost:2.63.0")
	certPEM, err := fsys.ReadFile("/localhost.crt")
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := fsys.ReadFile("/localhost.key")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("/localhost.crt and /localhost.key are not a pair: %v", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cert.Subject.Organization, []string{"Acme Co"}) || cert.NotAfter.Year() != 2084 {
		t.Errorf("certificate of %v until %v, want upstream's (Acme Co, 2084)", cert.Subject.Organization, cert.NotAfter)
	}
	for _, ip := range []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback} {
		if err := cert.VerifyHostname(ip.String()); err != nil {
			t.Errorf("not valid for %s: %v", ip, err)
		}
	}
}
