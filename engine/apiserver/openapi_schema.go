package apiserver

import (
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// jsonObj is one JSON object of an OpenAPI document. encoding/json writes
// map keys sorted, so documents are byte-for-byte repeatable (their hash is
// the cache key clients use).
type jsonObj = map[string]interface{}

// schemaBuilder generates OpenAPI schemas for the k8s.io/api Go types by
// reflection, as kube-openapi's generated definitions describe them: one
// named definition per struct, descriptions from SwaggerDoc(), the
// apimachinery types' own OpenAPISchemaType/Format, patch strategies from
// struct tags, and x-kubernetes-group-version-kind on API kinds.
type schemaBuilder struct {
	v3    bool
	defs  map[string]jsonObj
	kinds map[reflect.Type][]schema.GroupVersionKind
}

func newSchemaBuilder(v3 bool, kinds map[reflect.Type][]schema.GroupVersionKind) *schemaBuilder {
	return &schemaBuilder{v3: v3, defs: map[string]jsonObj{}, kinds: kinds}
}

// refPrefix is where definitions live in the document.
func (b *schemaBuilder) refPrefix() string {
	if b.v3 {
		return "#/components/schemas/"
	}
	return "#/definitions/"
}

// definitionName is the OpenAPI name of a Go type: its package path with the
// domain reversed (k8s.io/api/core/v1.Pod → io.k8s.api.core.v1.Pod).
func definitionName(t reflect.Type) string {
	path := t.PkgPath()
	if i := strings.Index(path, "/"); i > 0 {
		domain := strings.Split(path[:i], ".")
		for l, r := 0, len(domain)-1; l < r; l, r = l+1, r-1 {
			domain[l], domain[r] = domain[r], domain[l]
		}
		path = strings.Join(domain, ".") + path[i:]
	}
	return strings.ReplaceAll(path, "/", ".") + "." + t.Name()
}

// openAPITyped is what apimachinery's special types (Quantity, Time,
// IntOrString, FieldsV1, ...) implement to describe their own wire form.
type openAPITyped interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

type openAPIV3OneOf interface{ OpenAPIV3OneOfTypes() []string }

type swaggerDoc interface{ SwaggerDoc() map[string]string }

var rawExtensionType = reflect.TypeOf(runtime.RawExtension{})

// ref adds t's definition if needed and returns its name.
func (b *schemaBuilder) ref(t reflect.Type) string {
	name := definitionName(t)
	if _, ok := b.defs[name]; ok {
		return name
	}
	b.defs[name] = jsonObj{} // placeholder: breaks cycles
	b.defs[name] = b.definition(t)
	return name
}

// named reports whether a type gets its own definition.
func named(t reflect.Type) bool {
	if t.Name() == "" || t.PkgPath() == "" {
		return false
	}
	if t.Kind() == reflect.Struct {
		return true
	}
	_, ok := reflect.New(t).Interface().(openAPITyped)
	return ok
}

func (b *schemaBuilder) definition(t reflect.Type) jsonObj {
	def := jsonObj{}
	docs := docsOf(t)
	if d := docs[""]; d != "" {
		def["description"] = d
	}
	if typed, ok := reflect.New(t).Interface().(openAPITyped); ok {
		types := typed.OpenAPISchemaType()
		if oneOf, ok := reflect.New(t).Interface().(openAPIV3OneOf); ok && b.v3 && len(oneOf.OpenAPIV3OneOfTypes()) > 0 {
			var alts []interface{}
			for _, typ := range oneOf.OpenAPIV3OneOfTypes() {
				alts = append(alts, jsonObj{"type": typ})
			}
			def["oneOf"] = alts
		} else if len(types) == 1 {
			def["type"] = types[0]
		}
		if f := typed.OpenAPISchemaFormat(); f != "" {
			def["format"] = f
		}
		return def
	}
	if t == rawExtensionType {
		def["type"] = "object"
		return def
	}
	props := jsonObj{}
	var required []string
	b.fields(t, docs, props, &required)
	def["type"] = "object"
	if len(props) > 0 {
		def["properties"] = props
	}
	if len(required) > 0 {
		sort.Strings(required)
		def["required"] = required
	}
	if gvks := b.kinds[t]; len(gvks) > 0 {
		var list []interface{}
		for _, gvk := range gvks {
			list = append(list, jsonObj{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
		}
		def["x-kubernetes-group-version-kind"] = list
	}
	return def
}

func docsOf(t reflect.Type) map[string]string {
	if d, ok := reflect.New(t).Elem().Interface().(swaggerDoc); ok {
		return d.SwaggerDoc()
	}
	if d, ok := reflect.New(t).Interface().(swaggerDoc); ok {
		return d.SwaggerDoc()
	}
	return nil
}

// fields adds t's JSON fields to props, flattening inline embedded structs.
func (b *schemaBuilder) fields(t reflect.Type, docs map[string]string, props jsonObj, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) && f.Type.Kind() == reflect.Struct {
			b.fields(f.Type, docsOf(f.Type), props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := b.property(f.Type, docs[name])
		if ps := f.Tag.Get("patchStrategy"); ps != "" {
			s["x-kubernetes-patch-strategy"] = ps
		}
		if mk := f.Tag.Get("patchMergeKey"); mk != "" {
			s["x-kubernetes-patch-merge-key"] = mk
		}
		props[name] = s
		// Required as the generator decides without +optional markers: a
		// field always serialized that is not a pointer.
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") && f.Type.Kind() != reflect.Pointer {
			*required = append(*required, name)
		}
	}
}

// property is the schema of a field of type t with the given description.
func (b *schemaBuilder) property(t reflect.Type, description string) jsonObj {
	s := b.inline(t)
	if ref, ok := s["$ref"]; ok && b.v3 && description != "" {
		s = jsonObj{"allOf": []interface{}{jsonObj{"$ref": ref}}}
		if t.Kind() == reflect.Struct {
			s["default"] = jsonObj{}
		}
	}
	if description != "" {
		s["description"] = description
	}
	return s
}

// inline is the schema used where a value of type t appears.
func (b *schemaBuilder) inline(t reflect.Type) jsonObj {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if named(t) {
		return jsonObj{"$ref": b.refPrefix() + b.ref(t)}
	}
	switch t.Kind() {
	case reflect.String:
		return jsonObj{"type": "string"}
	case reflect.Bool:
		return jsonObj{"type": "boolean"}
	case reflect.Int32, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Int8, reflect.Uint8:
		return jsonObj{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64:
		return jsonObj{"type": "integer", "format": "int64"}
	case reflect.Float32, reflect.Float64:
		return jsonObj{"type": "number", "format": "double"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return jsonObj{"type": "string", "format": "byte"}
		}
		return jsonObj{"type": "array", "items": b.inline(t.Elem())}
	case reflect.Map:
		return jsonObj{"type": "object", "additionalProperties": b.inline(t.Elem())}
	case reflect.Interface:
		return jsonObj{"type": "object"}
	}
	return jsonObj{"type": "object"}
}
