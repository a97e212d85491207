package node

import (
	"os"
	"path/filepath"
	"testing"
)

// A subPath naming a ConfigMap key is a symbolic link into the volume's
// ..data directory: the kubelet must find it there and mount it, not try
// to make a directory over it ("failed to create subPath directory").
func TestSubPathOfAConfigMapKey(t *testing.T) {
	vol := t.TempDir()
	data := filepath.Join(vol, "..2026_11_28")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "configmap-key"), []byte("value"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..2026_11_28", filepath.Join(vol, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/configmap-key", filepath.Join(vol, "configmap-key")); err != nil {
		t.Fatal(err)
	}
	_, sub, hu, err := hostMounts(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		subPath string
		exists  bool
	}{{"configmap-key", true}, {"..data", true}, {"missing", false}} {
		got, err := hu.PathExists(filepath.Join(vol, tc.subPath))
		if err != nil || got != tc.exists {
			t.Errorf("PathExists(%s) = %v, %v; want %v", tc.subPath, got, err, tc.exists)
		}
	}
	// What the kubelet does for a subPath that does not exist yet.
	if err := sub.SafeMakeDir("new/dir", vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(vol, "new/dir")); err != nil || !st.IsDir() {
		t.Errorf("SafeMakeDir made no directory: %v", err)
	}
	if err := sub.SafeMakeDir("../outside", vol, 0o755); err == nil {
		t.Error("SafeMakeDir made a directory outside the volume")
	}
}
