package apiserver

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// Media types of the OpenAPI documents in protobuf, as clients ask for them,
// and the Content-Type kube-openapi answers with ("@" is not valid in a
// Content-Type that client-go parses).
const (
	mediaOpenAPIV2Proto      = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mediaOpenAPIV2ProtoReply = "application/octet-stream"
	mediaOpenAPIV3Proto      = "application/com.github.proto-openapi.spec.v3"
	mediaOpenAPIV3ProtoReply = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
)

// openAPIDoc is one served document in its encodings.
type openAPIDoc struct {
	json  []byte
	hash  string // sha512 of json, uppercase hex, as kube-apiserver's /openapi/v3 index gives it
	once  sync.Once
	proto []byte
	err   error
	parse func([]byte) ([]byte, error)
}

// protobuf converts the JSON document to gnostic's protobuf form once.
func (d *openAPIDoc) protobuf() ([]byte, error) {
	d.once.Do(func() { d.proto, d.err = d.parse(d.json) })
	return d.proto, d.err
}

// openAPIDocs are the server's OpenAPI documents: one v2 document, and one
// v3 document per group version with the index that names them.
type openAPIDocs struct {
	v2      *openAPIDoc
	v3      map[string]*openAPIDoc // "api/v1", "apis/apps/v1"
	v3Index []byte
}

var (
	openAPIOnce   sync.Once
	openAPICached *openAPIDocs
	openAPIErr    error
)

// openAPI builds the documents on first use; they depend only on the
// resources served, which never change.
func openAPI() (*openAPIDocs, error) {
	openAPIOnce.Do(func() { openAPICached, openAPIErr = buildOpenAPI(Resources()) })
	return openAPICached, openAPIErr
}

// reviewResource is the authorization group's one resource, served apart
// from storage (SelfSubjectAccessReview).
var reviewResource = &Resource{GVR: authorizationv1.SchemeGroupVersion.WithResource("selfsubjectaccessreviews"),
	Kind: "SelfSubjectAccessReview", Singular: "selfsubjectaccessreview",
	New: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }}

// createOnly are the resources served without storage: POST only.
var createOnly = []*Resource{whoamiResource, reviewResource}

func isCreateOnly(r *Resource) bool {
	for _, c := range createOnly {
		if c == r {
			return true
		}
	}
	return false
}

func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.String()
}

func buildOpenAPI(resources []*Resource) (*openAPIDocs, error) {
	kinds := kindsByType(resources)
	byGV := map[schema.GroupVersion][]*Resource{}
	var gvs []schema.GroupVersion
	for _, r := range append(append([]*Resource{}, resources...), createOnly...) {
		gv := r.GVR.GroupVersion()
		if byGV[gv] == nil {
			gvs = append(gvs, gv)
		}
		byGV[gv] = append(byGV[gv], r)
	}
	docs := &openAPIDocs{v3: map[string]*openAPIDoc{}}
	v2 := newSchemaBuilder(false, kinds)
	v2Paths := jsonObj{}
	index := jsonObj{}
	for _, gv := range gvs {
		v3 := newSchemaBuilder(true, kinds)
		v3Paths := jsonObj{}
		for _, r := range byGV[gv] {
			addPaths(v2, v2Paths, r, false)
			addPaths(v3, v3Paths, r, true)
		}
		doc := jsonObj{
			"openapi": "3.0.0",
			"info":    jsonObj{"title": "Kubernetes", "version": Version.GitVersion},
			"paths":   v3Paths,
			"components": jsonObj{"schemas": v3.defs, "securitySchemes": jsonObj{"BearerToken": jsonObj{
				"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer Token authentication"}}},
		}
		d, err := newDoc(doc, v3Proto)
		if err != nil {
			return nil, err
		}
		docs.v3[gvPath(gv)] = d
		index[gvPath(gv)] = jsonObj{"serverRelativeURL": "/openapi/v3/" + gvPath(gv) + "?hash=" + d.hash}
	}
	swagger := jsonObj{
		"swagger":     "2.0",
		"info":        jsonObj{"title": "Kubernetes", "version": Version.GitVersion},
		"paths":       v2Paths,
		"definitions": v2.defs,
		"securityDefinitions": jsonObj{"BearerToken": jsonObj{
			"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer Token authentication"}},
		"security": []interface{}{jsonObj{"BearerToken": []string{}}},
	}
	var err error
	if docs.v2, err = newDoc(swagger, v2Proto); err != nil {
		return nil, err
	}
	if docs.v3Index, err = json.Marshal(jsonObj{"paths": index}); err != nil {
		return nil, fmt.Errorf("openapi v3 index: %w", err)
	}
	return docs, nil
}

func newDoc(doc jsonObj, parse func([]byte) ([]byte, error)) (*openAPIDoc, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi document: %w", err)
	}
	sum := sha512.Sum512(data)
	return &openAPIDoc{json: data, hash: strings.ToUpper(fmt.Sprintf("%x", sum[:])), parse: parse}, nil
}

func v2Proto(data []byte) ([]byte, error) {
	doc, err := openapi_v2.ParseDocument(data)
	if err != nil {
		return nil, fmt.Errorf("openapi v2 protobuf: %w", err)
	}
	return proto.Marshal(doc)
}

func v3Proto(data []byte) ([]byte, error) {
	doc, err := openapi_v3.ParseDocument(data)
	if err != nil {
		return nil, fmt.Errorf("openapi v3 protobuf: %w", err)
	}
	return proto.Marshal(doc)
}

// kindsByType maps each Go type to the kinds it is registered as in the
// group versions served (x-kubernetes-group-version-kind).
func kindsByType(resources []*Resource) map[reflect.Type][]schema.GroupVersionKind {
	served := map[schema.GroupVersion]bool{autoscalingv1.SchemeGroupVersion: true}
	for _, r := range createOnly {
		served[r.GVR.GroupVersion()] = true
	}
	for _, r := range resources {
		served[r.GVR.GroupVersion()] = true
	}
	out := map[reflect.Type][]schema.GroupVersionKind{}
	for gvk, t := range scheme.Scheme.AllKnownTypes() {
		if served[gvk.GroupVersion()] {
			out[t] = append(out[t], gvk)
		}
	}
	for _, list := range out {
		sort.Slice(list, func(i, j int) bool {
			if list[i].Group != list[j].Group {
				return list[i].Group < list[j].Group
			}
			if list[i].Version != list[j].Version {
				return list[i].Version < list[j].Version
			}
			return list[i].Kind < list[j].Kind
		})
	}
	return out
}

// addPaths adds r's paths, and the definitions they name, to a document.
func addPaths(b *schemaBuilder, paths jsonObj, r *Resource, v3 bool) {
	gv := r.GVR.GroupVersion()
	if isCreateOnly(r) {
		def := b.ref(reflect.TypeOf(r.New()).Elem())
		op := operation{method: "post", action: "post", operationID: opID("create", gv, false, r.Kind, ""), kind: r.GVK(),
			params: writeParams, body: def, response: def}
		paths["/apis/"+gv.String()+"/"+r.GVR.Resource] = jsonObj{
			"parameters": []interface{}{paramJSON(pPretty, v3)},
			"post":       operationJSON(op, v3, gv, b.refPrefix()),
		}
		return
	}
	kindDef := b.ref(reflect.TypeOf(r.New()).Elem())
	listDef := b.ref(reflect.TypeOf(r.NewList()).Elem())
	for _, t := range []reflect.Type{reflect.TypeOf(metav1.Status{}), reflect.TypeOf(metav1.Patch{}),
		reflect.TypeOf(metav1.DeleteOptions{}), reflect.TypeOf(metav1.WatchEvent{})} {
		b.ref(t)
	}
	if r.HasSubresource("scale") {
		b.ref(reflect.TypeOf(autoscalingv1.Scale{}))
	}
	if r.HasSubresource("binding") {
		b.ref(reflect.TypeOf(corev1.Binding{}))
	}
	for _, p := range pathsFor(r, kindDef, listDef) {
		item := jsonObj{}
		var params []interface{}
		for _, pp := range p.params {
			params = append(params, paramJSON(pp, v3))
		}
		item["parameters"] = params
		for _, op := range p.ops {
			item[op.method] = operationJSON(op, v3, gv, b.refPrefix())
		}
		paths[p.path] = item
	}
}

// serveOpenAPI answers /openapi/v2, /openapi/v3 and /openapi/v3/<group version>;
// it reports false for other paths.
func serveOpenAPI(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	if p != "/openapi/v2" && p != "/openapi/v3" && !strings.HasPrefix(p, "/openapi/v3/") {
		return false
	}
	docs, err := openAPI()
	if err != nil {
		writeError(w, nil, err)
		return true
	}
	accept := r.Header.Get("Accept")
	switch {
	case p == "/openapi/v2":
		serveDoc(w, r, docs.v2, strings.Contains(accept, mediaOpenAPIV2Proto), mediaOpenAPIV2ProtoReply)
	case p == "/openapi/v3":
		w.Header().Set("Content-Type", mediaJSON)
		w.Write(docs.v3Index)
	default:
		d := docs.v3[strings.TrimPrefix(p, "/openapi/v3/")]
		if d == nil {
			writeError(w, nil, notFound(requestInfo{}))
			return true
		}
		serveDoc(w, r, d, strings.Contains(accept, mediaOpenAPIV3Proto), mediaOpenAPIV3ProtoReply)
	}
	return true
}

// serveDoc writes a document in JSON or protobuf with its ETag, answering
// 304 when the client already holds it.
func serveDoc(w http.ResponseWriter, r *http.Request, d *openAPIDoc, protobuf bool, protoType string) {
	etag := `"` + d.hash + `"`
	if protobuf {
		etag = `"` + d.hash + `-pb"`
	}
	w.Header().Set("Etag", etag)
	w.Header().Set("Vary", "Accept")
	if r.URL.Query().Get("hash") == d.hash {
		w.Header().Set("Cache-Control", "public, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache, private")
	}
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body, ctype := d.json, mediaJSON
	if protobuf {
		data, err := d.protobuf()
		if err != nil {
			writeError(w, nil, err)
			return
		}
		body, ctype = data, protoType
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(body)
}
