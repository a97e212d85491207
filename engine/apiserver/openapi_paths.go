package apiserver

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// param is one operation parameter of the OpenAPI documents.
type param struct {
	name, in, typ, description string
}

// Parameter descriptions are kube-apiserver's (k8s.io/apimachinery's ListOptions,
// DeleteOptions, PatchOptions docs).
var (
	pName      = param{"name", "path", "string", ""}
	pNamespace = param{"namespace", "path", "string", "object name and auth scope, such as for teams and projects"}
	pPretty    = param{"pretty", "query", "string", "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."}
	pDryRun    = param{"dryRun", "query", "string", "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"}
	pManager   = param{"fieldManager", "query", "string", "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint."}
	// pValidation is what kubectl looks for on PATCH operations to decide
	// that the server validates fields itself.
	pValidation = param{"fieldValidation", "query", "string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered."}
	pForce      = param{"force", "query", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."}
	listParams  = []param{
		{"allowWatchBookmarks", "query", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored."},
		{"continue", "query", "string", "The continue option should be set when retrieving more results from the server."},
		{"fieldSelector", "query", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."},
		{"labelSelector", "query", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."},
		{"limit", "query", "integer", "limit is a maximum number of responses to return for a list call."},
		{"resourceVersion", "query", "string", "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"},
		{"resourceVersionMatch", "query", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"},
		{"sendInitialEvents", "query", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection."},
		{"timeoutSeconds", "query", "integer", "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."},
		{"watch", "query", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."},
	}
	deleteParams = []param{pDryRun,
		{"gracePeriodSeconds", "query", "integer", "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately."},
		{"propagationPolicy", "query", "string", "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."},
	}
	logParams = []param{
		{"container", "query", "string", "The container for which to stream logs. Defaults to only container if there is one container in the pod."},
		{"follow", "query", "boolean", "Follow the log stream of the pod. Defaults to false."},
		{"tailLines", "query", "integer", "If set, the number of lines from the end of the logs to show. If not specified, logs are shown from the creation of the container or sinceSeconds or sinceTime"},
	}
	writeParams = []param{pDryRun, pManager, pValidation}
	patchParams = []param{pDryRun, pManager, pValidation, pForce}
)

// operation is one HTTP operation on a path.
type operation struct {
	method, action, operationID string // get/put/...; x-kubernetes-action; operationId
	kind                        schema.GroupVersionKind
	params                      []param
	body                        string // definition name of the request body, "" for none
	response                    string // definition name of the 200 response
	consumes                    []string
}

// pathItem is one URL path with its operations.
type pathItem struct {
	path   string
	params []param
	ops    []operation
}

var patchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}

// opID names an operation as kube-openapi does: verb, group and version in
// CamelCase, Namespaced, the kind (patchAppsV1NamespacedDeployment).
func opID(verb string, gv schema.GroupVersion, namespaced bool, kind, suffix string) string {
	group := "Core"
	if gv.Group != "" {
		group = ""
		for _, part := range strings.Split(strings.TrimSuffix(gv.Group, ".k8s.io"), ".") {
			group += strings.ToUpper(part[:1]) + part[1:]
		}
	}
	ns := ""
	if namespaced {
		ns = "Namespaced"
	}
	return verb + group + strings.ToUpper(gv.Version[:1]) + gv.Version[1:] + ns + kind + suffix
}

// pathsFor lists the paths of one served resource, with the definition
// names of its kinds.
func pathsFor(r *Resource, kindDef, listDef string) []pathItem {
	gv := r.GVR.GroupVersion()
	root := "/apis/" + gv.String()
	if gv.Group == "" {
		root = "/api/" + gv.Version
	}
	gvk := r.GVK()
	collection := root + "/" + r.GVR.Resource
	itemParams := []param{withDesc(pName, "name of the "+r.Kind), pPretty}
	collParams := []param{pPretty}
	if r.Namespaced {
		collection = root + "/namespaces/{namespace}/" + r.GVR.Resource
		itemParams = []param{withDesc(pName, "name of the "+r.Kind), pNamespace, pPretty}
		collParams = []param{pNamespace, pPretty}
	}
	item := collection + "/{name}"
	id := func(verb, suffix string) string { return opID(verb, gv, r.Namespaced, r.Kind, suffix) }
	items := []pathItem{
		{path: collection, params: collParams, ops: []operation{
			{method: "get", action: "list", operationID: id("list", ""), kind: gvk, params: listParams, response: listDef},
			{method: "post", action: "post", operationID: id("create", ""), kind: gvk, params: writeParams, body: kindDef, response: kindDef},
			{method: "delete", action: "deletecollection", operationID: id("deleteCollection", ""), kind: gvk, params: append(append([]param{}, deleteParams...), listParams...), response: "io.k8s.apimachinery.pkg.apis.meta.v1.Status"},
		}},
		{path: item, params: itemParams, ops: []operation{
			{method: "get", action: "get", operationID: id("read", ""), kind: gvk, response: kindDef},
			{method: "put", action: "put", operationID: id("replace", ""), kind: gvk, params: writeParams, body: kindDef, response: kindDef},
			{method: "patch", action: "patch", operationID: id("patch", ""), kind: gvk, params: patchParams, body: "io.k8s.apimachinery.pkg.apis.meta.v1.Patch", response: kindDef, consumes: patchTypes},
			{method: "delete", action: "delete", operationID: id("delete", ""), kind: gvk, params: deleteParams, response: "io.k8s.apimachinery.pkg.apis.meta.v1.Status"},
		}},
	}
	if r.Namespaced {
		items = append(items, pathItem{path: root + "/" + r.GVR.Resource, params: []param{pPretty}, ops: []operation{
			{method: "get", action: "list", operationID: opID("list", gv, false, r.Kind, "ForAllNamespaces"), kind: gvk, params: listParams, response: listDef},
		}})
	}
	for _, sub := range r.Subresources {
		p := pathItem{path: item + "/" + sub, params: itemParams}
		switch sub {
		case "status":
			p.ops = []operation{
				{method: "get", action: "get", operationID: id("read", "Status"), kind: gvk, response: kindDef},
				{method: "put", action: "put", operationID: id("replace", "Status"), kind: gvk, params: writeParams, body: kindDef, response: kindDef},
				{method: "patch", action: "patch", operationID: id("patch", "Status"), kind: gvk, params: patchParams, body: "io.k8s.apimachinery.pkg.apis.meta.v1.Patch", response: kindDef, consumes: patchTypes},
			}
		case "scale":
			scale := schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
			def := "io.k8s.api.autoscaling.v1.Scale"
			p.ops = []operation{
				{method: "get", action: "get", operationID: id("read", "Scale"), kind: scale, response: def},
				{method: "put", action: "put", operationID: id("replace", "Scale"), kind: scale, params: writeParams, body: def, response: def},
				{method: "patch", action: "patch", operationID: id("patch", "Scale"), kind: scale, params: patchParams, body: "io.k8s.apimachinery.pkg.apis.meta.v1.Patch", response: def, consumes: patchTypes},
			}
		case "binding":
			b := schema.GroupVersionKind{Version: "v1", Kind: "Binding"}
			p.ops = []operation{{method: "post", action: "post", operationID: id("create", "Binding"), kind: b, params: writeParams, body: "io.k8s.api.core.v1.Binding", response: "io.k8s.api.core.v1.Binding"}}
		case "log":
			p.ops = []operation{{method: "get", action: "get", operationID: id("read", "Log"), kind: gvk, params: logParams}}
		default:
			continue
		}
		items = append(items, p)
	}
	return items
}

func withDesc(p param, d string) param { p.description = d; return p }

// operationJSON renders an operation for the v2 (swagger) or v3 document.
func operationJSON(op operation, v3 bool, gv schema.GroupVersion, prefix string) jsonObj {
	tag := strings.ReplaceAll(strings.TrimSuffix(gv.Group, ".k8s.io"), ".", "")
	if gv.Group == "" {
		tag = "core"
	}
	tag += "_" + gv.Version
	o := jsonObj{
		"operationId":                     op.operationID,
		"tags":                            []string{tag},
		"x-kubernetes-action":             op.action,
		"x-kubernetes-group-version-kind": jsonObj{"group": op.kind.Group, "version": op.kind.Version, "kind": op.kind.Kind},
	}
	var params []interface{}
	for _, p := range op.params {
		params = append(params, paramJSON(p, v3))
	}
	media := []string{mediaJSON, mediaYAML, mediaProtobuf}
	ok := jsonObj{"description": "OK"}
	if op.response != "" {
		ref := jsonObj{"$ref": prefix + op.response}
		if v3 {
			content := jsonObj{}
			for _, m := range media {
				content[m] = jsonObj{"schema": ref}
			}
			ok["content"] = content
		} else {
			ok["schema"] = ref
		}
	} else if op.action == "get" { // pods/log: text
		if v3 {
			ok["content"] = jsonObj{"text/plain": jsonObj{"schema": jsonObj{"type": "string"}}}
		} else {
			ok["schema"] = jsonObj{"type": "string"}
		}
	}
	o["responses"] = jsonObj{"200": ok, "401": jsonObj{"description": "Unauthorized"}}
	if op.body != "" {
		ref := jsonObj{"$ref": prefix + op.body}
		consumes := op.consumes
		if consumes == nil {
			consumes = media
		}
		if v3 {
			content := jsonObj{}
			for _, m := range consumes {
				content[m] = jsonObj{"schema": ref}
			}
			o["requestBody"] = jsonObj{"content": content, "required": true}
		} else {
			params = append([]interface{}{jsonObj{"in": "body", "name": "body", "required": true, "schema": ref}}, params...)
			o["consumes"] = consumes
		}
	}
	if !v3 {
		o["produces"] = media
		o["schemes"] = []string{"https"}
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	return o
}

func paramJSON(p param, v3 bool) jsonObj {
	o := jsonObj{"name": p.name, "in": p.in}
	if p.description != "" {
		o["description"] = p.description
	}
	if p.in == "path" {
		o["required"] = true
	}
	if v3 {
		o["schema"] = jsonObj{"type": p.typ, "uniqueItems": true}
	} else {
		o["type"], o["uniqueItems"] = p.typ, true
	}
	return o
}
