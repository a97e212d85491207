package images

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	imageutils "k8s.io/kubernetes/test/utils/image"
)

// fakeParts stand in for the compiled programs: the tests check what
// the images are made of, not the programs (which take minutes to build).
var fakeParts = e2eParts{agnhost: []byte("agnhost program"), nnp: []byte("nnp program"), pause: []byte("pause program"),
	busybox: []byte("busybox program"), applets: []string{"sh", "httpd", "killall", "cat"}}

// wantImage is what one image must be: upstream's name, entrypoint, cmd
// and ports, and files (path → content it holds, or "-> target" for a link).
type wantImage struct {
	id         imageutils.ImageID
	entrypoint []string
	cmd        []string
	ports      []string
	user       string
	files      map[string]string
	modes      map[string]int64 // path → permission bits
}

var agnhostWant = map[string]string{"/agnhost": "agnhost program", "/agnhost-2": "-> agnhost",
	"/bin/sh": "-> busybox", "/bin/busybox": "busybox program",
	"/etc/group":  "group-defined-in-image:x:50000:user-defined-in-image",
	"/etc/passwd": "user-defined-in-image:x:1000:1000", "/uploads": "",
	"/localhost.crt": "BEGIN CERTIFICATE", "/localhost.key": "PRIVATE KEY"}

// jpegMagic starts every JPEG file.
const jpegMagic = "\xff\xd8\xff"

var agnhostPortsWant = []string{"5000/tcp", "80/tcp", "8080/tcp", "8081/tcp", "9376/tcp"}

// fakeTools stand in for the host's tools and their libraries.
var fakeTools = []File{{Path: "/usr/bin/dig", Mode: 0o755, Data: []byte("dig program")},
	{Path: "/lib64/ld-linux-x86-64.so.2", Mode: 0o755, Data: []byte("loader")}}

// upstreamOfRelease reads upstreamFiles from the release's module, as
// BuildE2E does (from the module cache: nothing is compiled).
func upstreamOfRelease(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := moduleFiles(context.Background(), Config{CacheDir: t.TempDir()},
		map[string][]byte{"go.mod": agnhostMod, "go.sum": agnhostSum}, "k8s.io/kubernetes", upstreamFiles...)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestE2EImages(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools []File
	}{{"without the host's tools", nil}, {"with the host's tools", fakeTools}} {
		t.Run(tc.name, func(t *testing.T) {
			parts := fakeParts
			parts.upstream = upstreamOfRelease(t)
			parts.tools = tc.tools
			built, err := e2eImages(parts)
			if err != nil {
				t.Fatal(err)
			}
			checkImages(t, built, e2eWant(tc.tools != nil))
		})
	}
}

// e2eWant is what e2eImages must make, with or without the host's tools.
func e2eWant(tools bool) []wantImage {
	agnhost := maps.Clone(agnhostWant)
	toolFiles := map[string]string{"/usr/bin/dig": "dig program", "/lib64/ld-linux-x86-64.so.2": "loader", "/bin/sh": "-> busybox"}
	if tools {
		maps.Copy(agnhost, toolFiles)
	}
	kitten := maps.Clone(agnhost)
	kitten["/data.json"], kitten["/kitten.jpg"], kitten["/etc/os-release"] = `"image": "kitten.jpg"`, jpegMagic, "Alpine Linux"
	nautilus := maps.Clone(agnhost)
	nautilus["/data.json"], nautilus["/nautilus.jpg"] = `"image": "nautilus.jpg"`, jpegMagic
	want := []wantImage{
		{id: imageutils.Agnhost, entrypoint: []string{"/agnhost"}, cmd: []string{"pause"}, ports: agnhostPortsWant, files: agnhost},
		{id: imageutils.AgnhostPrev, entrypoint: []string{"/agnhost"}, cmd: []string{"pause"}, ports: agnhostPortsWant, files: agnhost},
		{id: imageutils.Kitten, entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"}, ports: agnhostPortsWant, files: kitten},
		{id: imageutils.Nautilus, entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"}, ports: agnhostPortsWant, files: nautilus},
		{id: imageutils.BusyBox, cmd: []string{"sh"}, files: map[string]string{"/bin/sh": "-> busybox", "/bin/cat": "-> busybox", "/tmp": ""}},
		{id: imageutils.Nginx, cmd: []string{"nginx", "-g", "daemon off;"}, ports: []string{"80/tcp"}, files: map[string]string{
			"/usr/sbin/nginx": "exec httpd -f -p 80 -h /usr/share/nginx/html", "/bin/httpd": "-> busybox", "/bin/killall": "-> busybox",
			"/usr/share/nginx/html/index.html": "Welcome to nginx!"}},
		{id: imageutils.Pause, entrypoint: []string{"/pause"}, user: "65535:65535", files: map[string]string{"/pause": "pause program"}},
		{id: imageutils.Nonewprivs, cmd: []string{"nnp"}, files: map[string]string{"/usr/local/bin/nnp": "nnp program", "/bin/sh": "-> busybox"},
			modes: map[string]int64{"/usr/local/bin/nnp": 0o4755}},
	}
	if tools {
		want = append(want, wantImage{id: imageutils.GlibcDnsTesting, cmd: []string{"sh"}, files: toolFiles})
	}
	return want
}

func TestAggregatorImages(t *testing.T) {
	built, err := aggregatorImages([]byte("sample-apiserver program"), []byte("etcd program"), []byte("busybox program"), []string{"sh"})
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, built, []wantImage{
		{id: imageutils.APIServer, entrypoint: []string{"/sample-apiserver"},
			files: map[string]string{"/sample-apiserver": "sample-apiserver program", "/bin/sh": "-> busybox"}},
		// The aggregator spec runs /usr/local/bin/etcd as the container's command.
		{id: imageutils.Etcd, ports: []string{"2379/tcp", "2380/tcp", "4001/tcp", "7001/tcp"},
			files: map[string]string{"/usr/local/bin/etcd": "etcd program", "/bin/sh": "-> busybox"}},
	})
}

// checkImages checks that built holds exactly the images of want, each
// under the name the suite's manifest gives it, with its config and files,
// and no two with the same image ID.
func checkImages(t *testing.T, built []Built, want []wantImage) {
	t.Helper()
	byRef := map[string]v1.Image{}
	ids := map[v1.Hash]string{}
	for _, b := range built {
		if _, dup := byRef[b.Ref]; dup {
			t.Errorf("%s built twice", b.Ref)
		}
		byRef[b.Ref] = b.Image
		id, err := b.Image.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := ids[id]; ok {
			t.Errorf("%s and %s have the same image ID %s", b.Ref, other, id)
		}
		ids[id] = b.Ref
	}
	if len(built) != len(want) {
		t.Errorf("built %d images, want %d", len(built), len(want))
	}
	for _, w := range want {
		ref := imageutils.GetE2EImage(w.id)
		t.Run(ref, func(t *testing.T) {
			img, ok := byRef[ref]
			if !ok {
				t.Fatalf("%s not built (built: %v)", ref, slices.Sorted(maps.Keys(byRef)))
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			c := cf.Config
			if !slices.Equal(c.Entrypoint, w.entrypoint) || !slices.Equal(c.Cmd, w.cmd) || c.User != w.user {
				t.Errorf("entrypoint %q cmd %q user %q, want %q %q %q", c.Entrypoint, c.Cmd, c.User, w.entrypoint, w.cmd, w.user)
			}
			if got := slices.Sorted(maps.Keys(c.ExposedPorts)); !slices.Equal(got, w.ports) {
				t.Errorf("exposed ports %v, want %v", got, w.ports)
			}
			files, modes := flatten(t, img)
			if _, ok := files["/usr/bin/dig"]; ok && w.files["/usr/bin/dig"] == "" {
				t.Errorf("/usr/bin/dig present, want none")
			}
			for p, want := range w.modes {
				if modes[p] != want {
					t.Errorf("%s has mode %o, want %o", p, modes[p], want)
				}
			}
			for p, want := range w.files {
				got, ok := files[p]
				if !ok {
					t.Errorf("%s missing", p)
				} else if !strings.Contains(got, want) {
					t.Errorf("%s is %.80q, want it to hold %q", p, got, want)
				}
			}
		})
	}
}

// flatten reads an image's file system as containerd would unpack it:
// path → content ("-> target" for links) and path → mode.
func flatten(t *testing.T, img v1.Image) (map[string]string, map[string]int64) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files, modes := map[string]string{}, map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, modes
		}
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := io.Copy(&b, tr); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeSymlink {
			b.WriteString("-> " + h.Linkname)
		}
		p := "/" + strings.TrimSuffix(h.Name, "/")
		files[p], modes[p] = b.String(), h.Mode
	}
}

// TestNginxStandInCommands checks that the host's busybox has the
// commands the nginx stand-in's script runs.
func TestNginxStandInCommands(t *testing.T) {
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("no busybox to ask (install busybox-static)")
	}
	list := allApplets(Config{})
	for _, cmd := range []string{"httpd", "killall", "sh"} {
		if !slices.Contains(list, cmd) {
			t.Errorf("busybox has no %s: the nginx stand-in needs it", cmd)
		}
		if !strings.Contains(nginxScript, cmd) && cmd != "sh" {
			t.Errorf("the nginx script runs no %s", cmd)
		}
	}
}

// TestHostToolFiles checks the host's tools layer where the host has them:
// each tool, OpenBSD's nc under the name nc, dash as sh, and the resolver's order.
func TestHostToolFiles(t *testing.T) {
	files, err := hostToolFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if files == nil {
		t.Skip("the host lacks one of", hostTools)
	}
	got := map[string]File{}
	for _, f := range files {
		got[f.Path] = f
	}
	for _, p := range hostTools {
		if len(got[p].Data) == 0 {
			t.Errorf("%s missing", p)
		}
	}
	for path, link := range map[string]string{"/usr/bin/nc": "nc.openbsd", "/bin/nc": "/usr/bin/nc.openbsd", "/bin/sh": "/usr/bin/dash"} {
		if got[path].Link != link {
			t.Errorf("%s links to %q, want %q", path, got[path].Link, link)
		}
	}
	if !strings.Contains(string(got["/etc/nsswitch.conf"].Data), "hosts: files dns") {
		t.Errorf("nsswitch.conf %q", got["/etc/nsswitch.conf"].Data)
	}
}
