package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
)

func decodeDoc(t *testing.T, data []byte) map[string]interface{} {
	t.Helper()
	var doc map[string]interface{}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// dig walks a decoded JSON document along keys.
func dig(v interface{}, keys ...string) interface{} {
	for _, k := range keys {
		m, ok := v.(map[string]interface{})
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// refs collects every $ref in a document.
func refs(v interface{}, out map[string]bool) {
	switch x := v.(type) {
	case map[string]interface{}:
		for k, e := range x {
			if k == "$ref" {
				out[e.(string)] = true
			}
			refs(e, out)
		}
	case []interface{}:
		for _, e := range x {
			refs(e, out)
		}
	}
}

func TestOpenAPIV3IndexAndDocuments(t *testing.T) {
	docs, err := openAPI()
	if err != nil {
		t.Fatal(err)
	}
	index := decodeDoc(t, docs.v3Index)
	paths := dig(index, "paths").(map[string]interface{})
	for _, gv := range []string{"api/v1", "apis/apps/v1", "apis/rbac.authorization.k8s.io/v1", "apis/coordination.k8s.io/v1", "apis/authorization.k8s.io/v1", "apis/authentication.k8s.io/v1"} {
		url, _ := dig(paths, gv, "serverRelativeURL").(string)
		d := docs.v3[gv]
		if d == nil || url != "/openapi/v3/"+gv+"?hash="+d.hash {
			t.Errorf("index entry %s = %q", gv, url)
			continue
		}
		doc := decodeDoc(t, d.json)
		if doc["openapi"] != "3.0.0" {
			t.Errorf("%s: openapi %v", gv, doc["openapi"])
		}
		// Every reference resolves inside the same document.
		all := map[string]bool{}
		refs(doc, all)
		for ref := range all {
			name := strings.TrimPrefix(ref, "#/components/schemas/")
			if dig(doc, "components", "schemas", name) == nil {
				t.Errorf("%s: dangling $ref %s", gv, ref)
			}
		}
	}
}

// TestOpenAPIV3FieldValidation looks for fieldValidation the way kubectl's
// query-param verifier does: on the PATCH operation carrying the kind's
// x-kubernetes-group-version-kind.
func TestOpenAPIV3FieldValidation(t *testing.T) {
	docs, _ := openAPI()
	for _, tc := range []struct{ gv, group, kind string }{
		{"apis/apps/v1", "apps", "Deployment"}, {"api/v1", "", "Pod"}, {"api/v1", "", "ConfigMap"},
		{"apis/rbac.authorization.k8s.io/v1", "rbac.authorization.k8s.io", "ClusterRole"},
	} {
		doc := decodeDoc(t, docs.v3[tc.gv].json)
		found := false
		for _, item := range dig(doc, "paths").(map[string]interface{}) {
			op, _ := dig(item, "patch").(map[string]interface{})
			if op == nil || dig(op, "x-kubernetes-group-version-kind", "kind") != tc.kind ||
				dig(op, "x-kubernetes-group-version-kind", "group") != tc.group {
				continue
			}
			found = true
			has := false
			for _, p := range op["parameters"].([]interface{}) {
				if dig(p, "name") == "fieldValidation" && dig(p, "in") == "query" {
					has = true
				}
			}
			if !has {
				t.Errorf("%s PATCH %s lacks the fieldValidation query parameter", tc.kind, op["operationId"])
			}
		}
		if !found {
			t.Errorf("no PATCH operation for %s in %s", tc.kind, tc.gv)
		}
	}
	doc := decodeDoc(t, docs.v3["apis/apps/v1"].json)
	if id := dig(doc, "paths", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "patch", "operationId"); id != "patchAppsV1NamespacedDeployment" {
		t.Errorf("deployment patch operationId %v", id)
	}
}

func TestOpenAPISchemas(t *testing.T) {
	docs, _ := openAPI()
	core := decodeDoc(t, docs.v3["api/v1"].json)
	schema := func(name string) map[string]interface{} {
		s, _ := dig(core, "components", "schemas", name).(map[string]interface{})
		if s == nil {
			t.Fatalf("no schema %s", name)
		}
		return s
	}
	pod := schema("io.k8s.api.core.v1.Pod")
	if got := dig(pod, "x-kubernetes-group-version-kind"); !reflect.DeepEqual(got, []interface{}{
		map[string]interface{}{"group": "", "version": "v1", "kind": "Pod"}}) {
		t.Errorf("Pod x-kubernetes-group-version-kind = %v", got)
	}
	if d, _ := pod["description"].(string); d != (corev1.Pod{}).SwaggerDoc()[""] {
		t.Errorf("Pod description %q", d)
	}
	if dig(pod, "properties", "kind", "type") != "string" || dig(pod, "properties", "spec", "description") != (corev1.Pod{}).SwaggerDoc()["spec"] {
		t.Errorf("Pod properties: %v", pod["properties"])
	}
	spec := dig(pod, "properties", "spec", "allOf").([]interface{})
	if dig(spec[0], "$ref") != "#/components/schemas/io.k8s.api.core.v1.PodSpec" {
		t.Errorf("Pod spec ref %v", spec)
	}
	containers := dig(schema("io.k8s.api.core.v1.PodSpec"), "properties", "containers").(map[string]interface{})
	if containers["type"] != "array" || containers["x-kubernetes-patch-merge-key"] != "name" || containers["x-kubernetes-patch-strategy"] != "merge" ||
		dig(containers, "items", "$ref") != "#/components/schemas/io.k8s.api.core.v1.Container" {
		t.Errorf("PodSpec.containers = %v", containers)
	}
	container := schema("io.k8s.api.core.v1.Container")
	if !reflect.DeepEqual(container["required"], []interface{}{"name"}) {
		t.Errorf("Container required = %v", container["required"])
	}
	port := dig(schema("io.k8s.api.core.v1.ContainerPort"), "properties", "containerPort")
	if dig(port, "type") != "integer" || dig(port, "format") != "int32" {
		t.Errorf("containerPort = %v", port)
	}
	if got := dig(schema("io.k8s.api.core.v1.ResourceRequirements"), "properties", "limits", "additionalProperties", "$ref"); got != "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity" {
		t.Errorf("limits values %v", got)
	}
	if got := schema("io.k8s.apimachinery.pkg.api.resource.Quantity")["oneOf"]; !reflect.DeepEqual(got, []interface{}{
		map[string]interface{}{"type": "string"}, map[string]interface{}{"type": "number"}}) {
		t.Errorf("Quantity oneOf %v", got)
	}
	if tm := schema("io.k8s.apimachinery.pkg.apis.meta.v1.Time"); tm["type"] != "string" || tm["format"] != "date-time" {
		t.Errorf("Time = %v", tm)
	}
	if is := schema("io.k8s.apimachinery.pkg.util.intstr.IntOrString"); is["format"] != "int-or-string" || is["oneOf"] == nil {
		t.Errorf("IntOrString = %v", is)
	}
	if labels := dig(schema("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"), "properties", "labels"); dig(labels, "type") != "object" ||
		dig(labels, "additionalProperties", "type") != "string" {
		t.Errorf("ObjectMeta.labels = %v", labels)
	}
	if data := dig(schema("io.k8s.api.core.v1.Secret"), "properties", "data", "additionalProperties"); dig(data, "format") != "byte" {
		t.Errorf("Secret.data values = %v", data)
	}
}

// TestOpenAPIV2Protobuf decodes the v2 document as kubectl 1.27 does
// (gnostic protobuf) and finds the Deployment PATCH's fieldValidation.
func TestOpenAPIV2Protobuf(t *testing.T) {
	docs, _ := openAPI()
	data, err := docs.v2.protobuf()
	if err != nil {
		t.Fatal(err)
	}
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(data, doc); err != nil {
		t.Fatal(err)
	}
	defs := map[string]bool{}
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		defs[d.GetName()] = true
	}
	for _, name := range []string{"io.k8s.api.core.v1.Pod", "io.k8s.api.apps.v1.Deployment", "io.k8s.api.autoscaling.v1.Scale", "io.k8s.api.rbac.v1.Role"} {
		if !defs[name] {
			t.Errorf("v2 definitions lack %s", name)
		}
	}
	found := false
	for _, p := range doc.GetPaths().GetPath() {
		if p.GetName() != "/apis/apps/v1/namespaces/{namespace}/deployments/{name}" {
			continue
		}
		op := p.GetValue().GetPatch()
		gvk := ""
		for _, ext := range op.GetVendorExtension() {
			if ext.GetName() == "x-kubernetes-group-version-kind" {
				gvk = ext.GetValue().GetYaml()
			}
		}
		if !strings.Contains(gvk, "kind: Deployment") || !strings.Contains(gvk, "group: apps") {
			t.Errorf("deployment PATCH gvk extension %q", gvk)
		}
		for _, param := range op.GetParameters() {
			if param.GetParameter().GetNonBodyParameter().GetQueryParameterSubSchema().GetName() == "fieldValidation" {
				found = true
			}
		}
	}
	if !found {
		t.Error("the v2 Deployment PATCH has no fieldValidation query parameter")
	}
	all := map[string]bool{}
	refs(decodeDoc(t, docs.v2.json), all)
	for ref := range all {
		if !defs[strings.TrimPrefix(ref, "#/definitions/")] {
			t.Errorf("v2: dangling $ref %s", ref)
		}
	}
}

func TestServeOpenAPI(t *testing.T) {
	docs, _ := openAPI()
	get := func(path, accept, etag string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		if etag != "" {
			r.Header.Set("If-None-Match", etag)
		}
		w := httptest.NewRecorder()
		if !serveOpenAPI(w, r) {
			t.Fatalf("%s not served", path)
		}
		return w
	}
	tests := []struct {
		path, accept string
		code         int
		ctype        string
	}{
		{"/openapi/v2", "", 200, "application/json"},
		{"/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", 200, "application/octet-stream"},
		{"/openapi/v3", "", 200, "application/json"},
		{"/openapi/v3/apis/apps/v1", "application/json", 200, "application/json"},
		{"/openapi/v3/api/v1", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf", 200, "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"},
		{"/openapi/v3/apis/policy/v1", "", 404, "application/json"},
	}
	for _, tc := range tests {
		w := get(tc.path, tc.accept, "")
		if w.Code != tc.code || w.Header().Get("Content-Type") != tc.ctype {
			t.Errorf("GET %s (%s): %d %s, want %d %s", tc.path, tc.accept, w.Code, w.Header().Get("Content-Type"), tc.code, tc.ctype)
		}
	}
	w := get("/openapi/v3/apis/apps/v1?hash="+docs.v3["apis/apps/v1"].hash, "", "")
	if w.Header().Get("Cache-Control") != "public, immutable" {
		t.Errorf("hashed URL Cache-Control %q", w.Header().Get("Cache-Control"))
	}
	if w := get("/openapi/v3/apis/apps/v1", "", w.Header().Get("Etag")); w.Code != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", w.Code)
	}
	r := httptest.NewRequest(http.MethodGet, "/openapi-other", nil)
	if serveOpenAPI(httptest.NewRecorder(), r) {
		t.Error("/openapi-other served as OpenAPI")
	}
}
