package proc

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Mount is one file or directory the kubelet mounted into a container:
// a volume, a projected service account token, /etc/hosts, the
// termination log.
type Mount struct {
	// ContainerPath is where the container sees it, HostPath where the
	// kubelet put it.
	ContainerPath, HostPath string
	ReadOnly                bool
	// Type, when set, is the file system the kubelet mounted at HostPath
	// (or above it) for a node that mounts nothing for real: "tmpfs" for
	// an emptyDir of medium Memory. Empty: the host directory's own.
	Type string
	// Image, instead of HostPath, is the image (a normalized reference)
	// of an image volume: the container sees the image's files there.
	Image string
}

// FS is a simulated container's file system: its mounts, read and written
// where the kubelet put them, over an in-memory layer for every other
// path (the image's files are not there: a simulated image has none). It
// is safe for concurrent use: the container's process and its execs share
// it.
type FS struct {
	mounts []Mount // longest container path first
	// readOnly: the container's root file system is read-only
	// (readOnlyRootFilesystem); its mounts keep their own modes.
	readOnly bool
	// procSysReadOnly: /proc/sys is read-only (see WithSysctls).
	procSysReadOnly bool

	mu    sync.Mutex
	files map[string]*memFile // the in-memory layer, by clean absolute path
}

type memFile struct {
	data    []byte
	dir     bool
	modTime time.Time
}

// NewFS returns the file system of a container with mounts, its root
// read-only if readOnly.
func NewFS(mounts []Mount, readOnly bool) *FS {
	ms := make([]Mount, 0, len(mounts))
	var images []Mount
	for _, m := range mounts {
		if m.Image != "" && m.HostPath == "" {
			images = append(images, m)
		} else if m.ContainerPath != "" && m.HostPath != "" && path.Clean("/"+m.ContainerPath) != "/" {
			m.ContainerPath = path.Clean("/" + m.ContainerPath)
			ms = append(ms, m)
		}
	}
	sort.SliceStable(ms, func(i, j int) bool { return len(ms[i].ContainerPath) > len(ms[j].ContainerPath) })
	f := &FS{mounts: ms, files: map[string]*memFile{}, readOnly: readOnly}
	for _, d := range imageDirs {
		f.files[d] = &memFile{dir: true}
	}
	for _, m := range images {
		f.addImage(m.Image, path.Clean("/"+m.ContainerPath))
	}
	return f
}

// imageDirs are the directories nearly every image has: a simulated
// image's, empty.
var imageDirs = []string{"/bin", "/dev", "/etc", "/home", "/proc", "/root", "/sys", "/tmp", "/usr", "/var"}

// abs makes name absolute against dir and cleans it.
func abs(dir, name string) string {
	if !path.IsAbs(name) {
		name = path.Join(dir, name)
	}
	return path.Clean("/" + name)
}

// HostPath returns where the container's path name (absolute, clean) is
// on the host, and the mount that holds it; ok is false when no mount
// does (the file is in the in-memory layer).
func (f *FS) HostPath(name string) (hostPath string, m Mount, ok bool) {
	for _, m := range f.mounts {
		if name == m.ContainerPath {
			return m.HostPath, m, true
		}
		if rest, ok := strings.CutPrefix(name, m.ContainerPath+"/"); ok {
			return filepath.Join(m.HostPath, filepath.FromSlash(rest)), m, true
		}
	}
	return "", Mount{}, false
}

// Open opens name as os.OpenFile would, with flag and perm.
func (f *FS) Open(name string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	if h, m, ok := f.HostPath(name); ok {
		if m.ReadOnly && flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EROFS}
		}
		return os.OpenFile(h, flag, perm)
	}
	if name == "/dev/null" {
		return nullFile{}, nil
	}
	if f.readOnlyAt(name) && flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EROFS}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	mf, ok := f.files[name]
	switch {
	case ok && mf.dir:
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	case !ok && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	case !ok:
		mf = &memFile{modTime: time.Now()}
		f.files[name] = mf
	}
	if flag&os.O_TRUNC != 0 {
		mf.data, mf.modTime = nil, time.Now()
	}
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		return &memWriter{fs: f, file: mf, append: true}, nil
	}
	return &memReader{Reader: bytes.NewReader(bytes.Clone(mf.data))}, nil
}

// ReadFile reads the container's file name (relative to /).
func (f *FS) ReadFile(name string) ([]byte, error) {
	r, err := f.Open(abs("/", name), 0, 0)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Stat describes name.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	if h, _, ok := f.HostPath(name); ok {
		return os.Stat(h)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if mf, ok := f.files[name]; ok {
		return memInfo{name: path.Base(name), file: &memFile{dir: mf.dir, modTime: mf.modTime}, size: int64(len(mf.data))}, nil
	}
	if name == "/" || f.hasChildren(name) {
		return memInfo{name: path.Base(name), file: &memFile{dir: true}}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: syscall.ENOENT}
}

// hasChildren reports whether a mount or an in-memory file lies below dir.
func (f *FS) hasChildren(dir string) bool {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for _, m := range f.mounts {
		if strings.HasPrefix(m.ContainerPath, prefix) {
			return true
		}
	}
	for name := range f.files {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// ReadDir lists dir: a mount's own entries, or the mounts and in-memory
// files below it.
func (f *FS) ReadDir(dir string) ([]fs.DirEntry, error) {
	if h, _, ok := f.HostPath(dir); ok {
		return os.ReadDir(h)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	prefix := strings.TrimSuffix(dir, "/") + "/"
	seen := map[string]fs.DirEntry{}
	add := func(name string, info fs.FileInfo) {
		child, _, _ := strings.Cut(strings.TrimPrefix(name, prefix), "/")
		if _, ok := seen[child]; !ok && child != "" {
			seen[child] = fs.FileInfoToDirEntry(info)
		}
	}
	for _, m := range f.mounts {
		if strings.HasPrefix(m.ContainerPath, prefix) {
			info, err := os.Stat(m.HostPath)
			if err != nil || strings.Contains(strings.TrimPrefix(m.ContainerPath, prefix), "/") {
				info = memInfo{name: path.Base(m.ContainerPath), file: &memFile{dir: true}}
			}
			add(m.ContainerPath, renamed{info, strings.SplitN(strings.TrimPrefix(m.ContainerPath, prefix), "/", 2)[0]})
		}
	}
	for name, mf := range f.files {
		if strings.HasPrefix(name, prefix) {
			rest := strings.TrimPrefix(name, prefix)
			child, _, deeper := strings.Cut(rest, "/")
			add(name, memInfo{name: child, file: &memFile{dir: deeper || mf.dir, modTime: mf.modTime}, size: int64(len(mf.data))})
		}
	}
	if len(seen) == 0 && dir != "/" {
		if mf, ok := f.files[dir]; !ok || !mf.dir {
			return nil, &fs.PathError{Op: "open", Path: dir, Err: syscall.ENOENT}
		}
	}
	out := make([]fs.DirEntry, 0, len(seen))
	for _, e := range seen {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// Mkdir makes dir (and its parents) in the in-memory layer, or on the
// host under a writable mount.
func (f *FS) Mkdir(dir string) error {
	if h, m, ok := f.HostPath(dir); ok {
		if m.ReadOnly {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.EROFS}
		}
		return os.MkdirAll(h, 0o755)
	}
	if f.readOnly {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.EROFS}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.files[dir]; !ok {
		f.files[dir] = &memFile{dir: true, modTime: time.Now()}
	}
	return nil
}

// Remove removes name; a directory only if recursive, with what it holds.
func (f *FS) Remove(name string, recursive bool) error {
	if h, m, ok := f.HostPath(name); ok {
		if m.ReadOnly || name == m.ContainerPath {
			return &fs.PathError{Op: "remove", Path: name, Err: syscall.EROFS}
		}
		if st, err := os.Stat(h); err == nil && st.IsDir() && !recursive {
			return &fs.PathError{Op: "remove", Path: name, Err: syscall.EISDIR}
		}
		if recursive {
			return os.RemoveAll(h)
		}
		return os.Remove(h)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	mf, ok := f.files[name]
	switch {
	case !ok:
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOENT}
	case f.readOnly:
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.EROFS}
	case mf.dir && !recursive:
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.EISDIR}
	}
	delete(f.files, name)
	for other := range f.files {
		if strings.HasPrefix(other, name+"/") {
			delete(f.files, other)
		}
	}
	return nil
}

type memReader struct{ *bytes.Reader }

func (memReader) Write([]byte) (int, error) { return 0, errors.New("bad file descriptor") }
func (memReader) Close() error              { return nil }

type memWriter struct {
	fs     *FS
	file   *memFile
	append bool
}

func (w *memWriter) Read([]byte) (int, error) { return 0, io.EOF }
func (w *memWriter) Close() error             { return nil }
func (w *memWriter) Write(p []byte) (int, error) {
	w.fs.mu.Lock()
	defer w.fs.mu.Unlock()
	w.file.data = append(w.file.data, p...)
	w.file.modTime = time.Now()
	return len(p), nil
}

type nullFile struct{}

func (nullFile) Read([]byte) (int, error)    { return 0, io.EOF }
func (nullFile) Write(p []byte) (int, error) { return len(p), nil }
func (nullFile) Close() error                { return nil }

// memInfo describes an in-memory file or directory.
type memInfo struct {
	name string
	file *memFile
	size int64
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return i.file.modTime }
func (i memInfo) IsDir() bool        { return i.file.dir }
func (i memInfo) Sys() any           { return &syscall.Stat_t{} } // root's, for the interpreter's -O and -G
func (i memInfo) Mode() fs.FileMode {
	if i.file.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

// renamed is a FileInfo under another name (a mount point's).
type renamed struct {
	fs.FileInfo
	name string
}

func (r renamed) Name() string { return r.name }
