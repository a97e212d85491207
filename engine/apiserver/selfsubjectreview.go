package apiserver

import (
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// whoamiResource is authentication.k8s.io/v1 SelfSubjectReview, served
// apart from storage: `kubectl auth whoami`.
var whoamiResource = &Resource{GVR: authenticationv1.SchemeGroupVersion.WithResource("selfsubjectreviews"),
	Kind: "SelfSubjectReview", Singular: "selfsubjectreview",
	New: func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }}

// selfSubjectReview answers with the user the request authenticated as,
// as kube-apiserver's SelfSubjectReview REST does (201 Created).
func (s *Server) selfSubjectReview(w http.ResponseWriter, r *http.Request, rt *requestTrace) {
	acc, obj, ok := decodeReview(w, r, whoamiResource)
	if !ok {
		return
	}
	review := obj.(*authenticationv1.SelfSubjectReview)
	review.CreationTimestamp = metav1.NewTime(s.cfg.Clock.Now().Truncate(1e9))
	if u := rt.user; u != nil {
		info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
		if len(u.Extra) > 0 {
			info.Extra = map[string]authenticationv1.ExtraValue{}
			for k, v := range u.Extra {
				info.Extra[k] = v
			}
		}
		review.Status.UserInfo = info
	}
	review.SetGroupVersionKind(whoamiResource.GVK())
	writeObject(w, acc.format, http.StatusCreated, review)
}
