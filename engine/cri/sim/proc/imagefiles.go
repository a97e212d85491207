package proc

import (
	"bytes"
	"embed"
	"net"
	"path"
	"sync"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// webFiles are the files kitten's and nautilus's Dockerfiles add to
// agnhost's image (test/images/kitten/html and test/images/nautilus/html
// of Kubernetes v1.36.3): a picture and the data.json that names it.
//
//go:embed imagefiles
var webFiles embed.FS

// alpineOSRelease is /etc/os-release of Alpine 3.21, agnhost's base image
// (test/images/agnhost/BASEIMAGE) and so kitten's and nautilus's.
const alpineOSRelease = `NAME="Alpine Linux"
ID=alpine
VERSION_ID=3.21.3
PRETTY_NAME="Alpine Linux v3.21"
HOME_URL="https://alpinelinux.org/"
BUG_REPORT_URL="https://gitlab.alpinelinux.org/alpine/aports/-/issues"
`

// agnhostCert is the agnhost image's /localhost.crt and /localhost.key:
// a certificate for 127.0.0.1 and ::1, made once.
var agnhostCert = sync.OnceValues(func() ([2][]byte, error) {
	cert, key, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, nil)
	return [2][]byte{cert, key}, err
})

// imageFiles are the files of image that the simulation knows, by path (a
// simulated image has no others): agnhost's and the images built on it
// (kitten, nautilus) have Alpine's /etc/os-release and /localhost.crt and
// /localhost.key, which StatefulSets' readiness probes fetch from its
// test-webserver and HTTPS servers use; kitten and nautilus add their
// picture and /data.json, which their test-webserver serves.
func imageFiles(image string) map[string][]byte {
	if !imageHas(image, "agnhost") {
		return nil
	}
	files := map[string][]byte{"/etc/os-release": []byte(alpineOSRelease)}
	if pair, err := agnhostCert(); err == nil {
		files["/localhost.crt"], files["/localhost.key"] = pair[0], pair[1]
	}
	switch base := ImageBase(image); base {
	case "kitten", "nautilus":
		jpg, _ := webFiles.ReadFile("imagefiles/" + base + ".jpg")
		data, _ := webFiles.ReadFile("imagefiles/" + base + ".json")
		files["/"+base+".jpg"], files["/data.json"] = jpg, data
	}
	return files
}

// addImage puts image's files under dir in the in-memory layer: at the
// root for the container's own image, at an image volume's mount path
// for the volume's. f.mu is held.
func (f *FS) addImage(image, dir string) {
	now := time.Now()
	for name, data := range imageFiles(image) {
		f.files[path.Join(dir, name)] = &memFile{data: bytes.Clone(data), modTime: now} // each container writes its own copy
	}
	if dir != "/" {
		f.files[dir] = &memFile{dir: true, modTime: now}
	}
}
