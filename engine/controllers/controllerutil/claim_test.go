package controllerutil

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
