package proc

import (
	"bytes"
	"embed"
	"path"
	"time"
)

// upstreamFiles are files of upstream's images, copied from Kubernetes
// v1.36.3 (k8s.io/kubernetes, under the Apache License 2.0, as the
// module's LICENSE says): kitten.jpg and nautilus.jpg and the data.json
// beside each, which kitten's and nautilus's Dockerfiles add to agnhost's
// image (test/images/kitten/html, test/images/nautilus/html), and
// localhost.crt and localhost.key, which agnhost's Dockerfile adds to its
// root from test/images/agnhost/porter (a certificate for 127.0.0.1, ::1
// and example.com, valid until 2084, and its key).
//
//go:embed imagefiles
var upstreamFiles embed.FS

// alpineOSRelease is /etc/os-release of Alpine 3.21, agnhost's base image
// (test/images/agnhost/BASEIMAGE) and so kitten's and nautilus's.
const alpineOSRelease = `NAME="Alpine Linux"
ID=alpine
VERSION_ID=3.21.3
PRETTY_NAME="Alpine Linux v3.21"
HOME_URL="https://alpinelinux.org/"
BUG_REPORT_URL="https://gitlab.alpinelinux.org/alpine/aports/-/issues"
`

// agnhostCert is the agnhost image's /localhost.crt and /localhost.key
// (upstream's, see upstreamFiles).
func agnhostCert() (cert, key []byte) {
	cert, _ = upstreamFiles.ReadFile("imagefiles/localhost.crt")
	key, _ = upstreamFiles.ReadFile("imagefiles/localhost.key")
	return cert, key
}

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
	files["/localhost.crt"], files["/localhost.key"] = agnhostCert()
	switch base := ImageBase(image); base {
	case "kitten", "nautilus":
		jpg, _ := upstreamFiles.ReadFile("imagefiles/" + base + ".jpg")
		data, _ := upstreamFiles.ReadFile("imagefiles/" + base + ".json")
		files["/"+base+".jpg"], files["/data.json"] = jpg, data
	}
	return files
}

// WithImage adds to f the files of image that the simulation knows (see
// imageFiles). It returns f.
func (f *FS) WithImage(image string) *FS {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addImage(image, "/")
	return f
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
