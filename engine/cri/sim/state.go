package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// state is what the runtime keeps across restarts: the records of its
// sandboxes and containers, as containerd keeps them in its metadata store,
// and its images, as its content store keeps them. The processes are not
// kept: after a restart the node has rebooted.
type state struct {
	Sandboxes  []sandboxRecord               `json:"sandboxes"`
	Containers []*runtimeapi.ContainerStatus `json:"containers"`
	Images     []imageRecord                 `json:"images,omitempty"`
}

// imageRecord is an image as the state file keeps it (its fields' names
// are the file's keys).
type imageRecord struct {
	// Ref is the normalized reference pulled, the image's one tag.
	Ref string
	// ID is the image's content digest, "sha256:...".
	ID string
	// RepoDigest is name@digest, what a pod status reports as imageID.
	RepoDigest string
	Size       int64
}

// criImage is the image rec records.
func (rec imageRecord) criImage() *runtimeapi.Image {
	return &runtimeapi.Image{Id: rec.ID, RepoTags: []string{rec.Ref}, RepoDigests: []string{rec.RepoDigest}, Size: uint64(rec.Size)}
}

// recordOf is img's record in the state file.
func recordOf(img *runtimeapi.Image) imageRecord {
	return imageRecord{Ref: img.RepoTags[0], ID: img.Id, RepoDigest: img.RepoDigests[0], Size: int64(img.Size)}
}

type sandboxRecord struct {
	ID      string                       `json:"id"`
	Config  *runtimeapi.PodSandboxConfig `json:"config"`
	Created time.Time                    `json:"created"`
	IP      string                       `json:"ip"`
}

// containerdUnknownExit is the exit containerd gives a container whose
// process is gone when it starts again (its unknownExitCode and reason).
const (
	containerdUnknownExit   = 255
	containerdUnknownReason = "Unknown"
)

// restore loads StateFile, if any. Every sandbox comes back NotReady and
// every container exited, as after a node reboot: a container that was
// running exits 255, reason Unknown, as containerd reports it. The kubelet
// then sees its pods' sandboxes changed and restarts them.
func (r *Runtime) restore() error {
	if r.cfg.StateFile == "" {
		return nil
	}
	data, err := os.ReadFile(r.cfg.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("runtime state %s: %w", r.cfg.StateFile, err)
	}
	for _, img := range st.Images {
		r.images[img.Ref] = img.criImage()
	}
	now := time.Now()
	for _, sb := range st.Sandboxes {
		r.sandboxes[sb.ID] = &sandbox{id: sb.ID, config: sb.Config, created: sb.Created, ip: sb.IP}
	}
	for _, cs := range st.Containers {
		if cs.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			cs.State, cs.ExitCode, cs.Reason, cs.Message = runtimeapi.ContainerState_CONTAINER_EXITED, containerdUnknownExit, containerdUnknownReason, ""
			cs.FinishedAt = now.UnixNano()
		}
		sb := cs.Annotations[sandboxAnnotation]
		delete(cs.Annotations, sandboxAnnotation)
		r.containers[cs.Id] = &container{id: cs.Id, sandbox: sb, status: cs}
	}
	return nil
}

// sandboxAnnotation carries a saved container's sandbox ID in its record
// (ContainerStatus has no field for it).
const sandboxAnnotation = "podtrace.dev/sandbox-id"

// Save writes the records of every sandbox, container and image to
// StateFile (atomically), if it is set and they changed since the last
// Save; the engine calls it periodically, and Shutdown a last time. An
// unchanged runtime (its changes as at the last Save) costs no snapshot:
// a node at rest marshals nothing.
func (r *Runtime) Save(context.Context) error {
	if r.cfg.StateFile == "" {
		return nil
	}
	r.saveMu.Lock()
	saved, savedChanges := r.saved != nil, r.savedChanges
	r.saveMu.Unlock()
	r.mu.Lock()
	if saved && r.changes == savedChanges {
		r.mu.Unlock()
		return nil
	}
	st, changes := r.snapshot(), r.changes
	r.mu.Unlock()
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	if r.closed.Load() {
		return nil
	}
	if !bytes.Equal(data, r.saved) {
		if err := writeAtomically(r.cfg.StateFile, data); err != nil {
			return err
		}
	}
	r.saved, r.savedChanges = data, changes
	return nil
}

// snapshot is the state Save writes, sorted by ID (images by reference).
// r.mu must be held.
func (r *Runtime) snapshot() state {
	var st state
	for _, sb := range r.sandboxes {
		st.Sandboxes = append(st.Sandboxes, sandboxRecord{ID: sb.id, Config: sb.config, Created: sb.created, IP: sb.ip})
	}
	for _, c := range r.containers {
		rec := proto.Clone(c.status).(*runtimeapi.ContainerStatus)
		rec.Annotations = map[string]string{sandboxAnnotation: c.sandbox}
		maps.Copy(rec.Annotations, c.status.Annotations)
		st.Containers = append(st.Containers, rec)
	}
	for _, img := range r.images {
		st.Images = append(st.Images, recordOf(img))
	}
	slices.SortFunc(st.Images, func(a, b imageRecord) int { return strings.Compare(a.Ref, b.Ref) })
	slices.SortFunc(st.Sandboxes, func(a, b sandboxRecord) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(st.Containers, func(a, b *runtimeapi.ContainerStatus) int { return strings.Compare(a.Id, b.Id) })
	return st
}

// writeAtomically replaces file with data: a crash leaves the old state
// or the new one, never half of it.
func writeAtomically(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// Shutdown saves the state a last time and stops the runtime: from then on
// it writes nothing under the data dir (no save, no new sandbox, container
// or log file) and its streaming port is closed, so the data dir can be
// removed or reused by the next run.
func (r *Runtime) Shutdown(ctx context.Context) error {
	err := r.Save(ctx)
	r.saveMu.Lock()
	r.closed.Store(true)
	r.saveMu.Unlock()
	r.stopStreams()
	return err
}
