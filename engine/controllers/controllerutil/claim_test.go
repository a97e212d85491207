package controllerutil

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestClaimer(t *testing.T) {
	rs := &apps.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid"}}
	kind := apps.SchemeGroupVersion.WithKind("ReplicaSet")
	mine := []metav1.OwnerReference{*metav1.NewControllerRef(rs, kind)}
	theirs := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "other", UID: "other", Controller: ptr.To(true)}}
	pod := func(app string, refs []metav1.OwnerReference) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "pod-uid", Labels: map[string]string{"app": app}, OwnerReferences: refs}}
	}
	tests := []struct {
		name       string
		pod        *v1.Pod
		canAdopt   error
		want       bool
		wantErr    bool
		wantPatch  string // "adopt", "release" or ""
		deletingRS bool
	}{
		{name: "mine and matching", pod: pod("web", mine), want: true},
		{name: "mine, relabelled", pod: pod("debug", mine), wantPatch: "release"},
		{name: "mine, relabelled, owner deleting", pod: pod("debug", mine), deletingRS: true},
		{name: "someone else's", pod: pod("web", theirs)},
		{name: "matching orphan", pod: pod("web", nil), want: true, wantPatch: "adopt"},
		{name: "orphan, owner deleting", pod: pod("web", nil), deletingRS: true},
		{name: "orphan not matching", pod: pod("debug", nil)},
		{name: "orphan, owner gone", pod: pod("web", nil), canAdopt: errors.New("gone"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner := rs.DeepCopy()
			if tt.deletingRS {
				owner.DeletionTimestamp = ptr.To(metav1.Now())
			}
			var patched map[string]any
			m := &Claimer{Controller: owner, Kind: kind,
				CanAdopt: func(context.Context) error { return tt.canAdopt },
				Patch: func(_ context.Context, ns, name string, patch []byte) error {
					if ns != "default" || name != "p" {
						t.Fatalf("patched %s/%s", ns, name)
					}
					return json.Unmarshal(patch, &patched)
				}}
			got, err := m.Claim(context.Background(), tt.pod, func(o metav1.Object) bool { return o.GetLabels()["app"] == "web" })
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("Claim = %v, %v; want %v, err %v", got, err, tt.want, tt.wantErr)
			}
			switch {
			case tt.wantPatch == "" && patched != nil:
				t.Fatalf("unexpected patch %v", patched)
			case tt.wantPatch != "":
				meta := patched["metadata"].(map[string]any)
				ref := meta["ownerReferences"].([]any)[0].(map[string]any)
				if meta["uid"] != "pod-uid" || ref["uid"] != "rs-uid" {
					t.Fatalf("patch = %v", patched)
				}
				if tt.wantPatch == "adopt" && (ref["controller"] != true || ref["blockOwnerDeletion"] != true || ref["kind"] != "ReplicaSet" || ref["name"] != "web") {
					t.Fatalf("adopt patch = %v", patched)
				}
				if tt.wantPatch == "release" && ref["$patch"] != "delete" {
					t.Fatalf("release patch = %v", patched)
				}
			}
		})
	}
}

func TestNewClaimerClaimAll(t *testing.T) {
	rs := &apps.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid"}}
	kind := apps.SchemeGroupVersion.WithKind("ReplicaSet")
	mine := []metav1.OwnerReference{*metav1.NewControllerRef(rs, kind)}
	pod := func(name, app string, refs []metav1.OwnerReference) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid"),
			Labels: map[string]string{"app": app}, OwnerReferences: refs}}
	}
	pods := []*v1.Pod{pod("a", "web", mine), pod("b", "web", nil), pod("c", "db", nil), pod("d", "web", nil)}
	tests := []struct {
		name    string
		fresh   *apps.ReplicaSet // what the recheck reads
		getErr  error
		want    []string
		wantErr string
	}{
		{name: "adopts matching orphans", fresh: rs, want: []string{"a", "b", "d"}},
		{name: "recreated under the name", fresh: &apps.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "new"}},
			want:    []string{"a"},
			wantErr: "can't adopt ReplicaSet default/b (b-uid): can't recheck DeletionTimestamp: original ReplicaSet default/web is gone: got uid new, wanted rs-uid"},
		{name: "being deleted", fresh: &apps.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid",
			DeletionTimestamp: ptr.To(metav1.Now())}}, want: []string{"a"}, wantErr: "has just been deleted"},
		{name: "recheck fails", getErr: errors.New("boom"), want: []string{"a"}, wantErr: "can't recheck DeletionTimestamp: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gets, patches := 0, 0
			m := NewClaimer(rs, kind,
				func(context.Context) (*apps.ReplicaSet, error) { gets++; return tt.fresh, tt.getErr },
				func(context.Context, string, string, []byte) error { patches++; return nil })
			got, err := ClaimAll(context.Background(), m, labels.SelectorFromSet(labels.Set{"app": "web"}), pods)
			var names []string
			for _, p := range got {
				names = append(names, p.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("claimed %v; want %v", names, tt.want)
			}
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v; want %q", err, tt.wantErr)
			}
			if gets != 1 || (tt.wantErr == "" && patches != 2) || (tt.wantErr != "" && patches != 0) {
				t.Fatalf("%d rechecks, %d patches", gets, patches)
			}
		})
	}
}
