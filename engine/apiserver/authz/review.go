package authz

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podtrace/podtrace/engine/apiserver/authn"
)

// Review evaluates a SelfSubjectAccessReview for user (the requester), as
// kube-apiserver's selfsubjectaccessreviews REST does; `kubectl auth can-i`
// reads Allowed and Reason. Validate the spec first with
// ValidateSelfSubjectAccessReviewSpec. An empty resource version means any
// version ("*").
func Review(ctx context.Context, a Authorizer, spec authorizationv1.SelfSubjectAccessReviewSpec, user authn.User) authorizationv1.SubjectAccessReviewStatus {
	return evaluate(ctx, a, attributesFrom(user, spec.ResourceAttributes, spec.NonResourceAttributes))
}

// ReviewSubject evaluates a SubjectAccessReview: the user to check is the
// one named in the spec, not the requester.
func ReviewSubject(ctx context.Context, a Authorizer, spec authorizationv1.SubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus {
	user := authn.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		user.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			user.Extra[k] = v
		}
	}
	return evaluate(ctx, a, attributesFrom(user, spec.ResourceAttributes, spec.NonResourceAttributes))
}

func evaluate(ctx context.Context, a Authorizer, attrs Attributes) authorizationv1.SubjectAccessReviewStatus {
	decision, reason, err := a.Authorize(ctx, attrs)
	status := authorizationv1.SubjectAccessReviewStatus{
		Allowed: decision == DecisionAllow,
		Denied:  decision == DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	return status
}

// attributesFrom converts review attributes (exactly one of ra, nra must be
// set; a spec failing validation with neither yields a request nobody may make).
func attributesFrom(user authn.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) Attributes {
	if ra != nil {
		version := ra.Version
		if version == "" {
			version = "*"
		}
		return Attributes{
			User:            user,
			Verb:            ra.Verb,
			ResourceRequest: true,
			APIGroup:        ra.Group,
			APIVersion:      version,
			Resource:        ra.Resource,
			Subresource:     ra.Subresource,
			Namespace:       ra.Namespace,
			Name:            ra.Name,
		}
	}
	if nra != nil {
		return Attributes{User: user, Verb: nra.Verb, Path: nra.Path}
	}
	return Attributes{User: user}
}

// ValidateSelfSubjectAccessReviewSpec returns upstream's validation errors
// for a SelfSubjectAccessReview spec (fldPath is normally field.NewPath("spec")).
// Answer a non-empty list with apierrors.NewInvalid.
func ValidateSelfSubjectAccessReviewSpec(spec authorizationv1.SelfSubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	return validateAttributes(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
}

// ValidateSubjectAccessReviewSpec returns upstream's validation errors for a
// SubjectAccessReview spec, which must also name a user or a group.
func ValidateSubjectAccessReviewSpec(spec authorizationv1.SubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	errs := validateAttributes(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(fldPath.Child("user"), spec.User, `at least one of user or group must be specified`))
	}
	return errs
}

func validateAttributes(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ra != nil && nra != nil {
		errs = append(errs, field.Invalid(fldPath.Child("nonResourceAttributes"), nra, `cannot be specified in combination with resourceAttributes`))
	}
	if ra == nil && nra == nil {
		errs = append(errs, field.Invalid(fldPath.Child("resourceAttributes"), nra, `exactly one of nonResourceAttributes or resourceAttributes must be specified`))
	}
	return errs
}
