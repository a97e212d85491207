package apiserver

import (
	"bytes"
	"mime"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

// Media types the server speaks.
const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

var codecs = serializer.NewCodecFactory(scheme.Scheme)

// format is one negotiated wire format.
type format struct {
	mediaType string
	info      runtime.SerializerInfo
}

var formats = func() map[string]*format {
	m := map[string]*format{}
	for _, info := range codecs.SupportedMediaTypes() {
		m[info.MediaType] = &format{mediaType: info.MediaType, info: info}
	}
	return m
}()

// accepted is what a client's Accept header asks for.
type accepted struct {
	format *format
	table  bool // as=Table;g=meta.k8s.io
	// include is the Table's includeObject: None, Metadata (default) or Object.
	include string
}

// negotiate picks the response format from the Accept header, as
// kube-apiserver does: the first supported entry wins; */* means JSON.
func negotiate(r *http.Request, watching bool) (accepted, error) {
	header := r.Header.Get("Accept")
	if header == "" {
		return accepted{format: formats[mediaJSON]}, nil
	}
	for _, part := range strings.Split(header, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt == "*/*" || mt == "application/*" {
			mt = mediaJSON
		}
		f, ok := formats[mt]
		if !ok || (watching && f.info.StreamSerializer == nil) {
			continue
		}
		switch params["as"] {
		case "":
			return accepted{format: f}, nil
		case "Table":
			if (params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1")) && mt != mediaProtobuf {
				return accepted{format: f, table: true, include: r.URL.Query().Get("includeObject")}, nil
			}
		}
	}
	return accepted{}, statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		"only the following media types are accepted: "+strings.Join(supportedTypes, ", "))
}

// decoderFor returns the format of a request body from its Content-Type.
func decoderFor(r *http.Request) (*format, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return formats[mediaJSON], nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, unsupportedMediaType()
	}
	f, ok := formats[mt]
	if !ok {
		return nil, unsupportedMediaType()
	}
	return f, nil
}

var supportedTypes = []string{mediaJSON, mediaYAML, mediaProtobuf}

func unsupportedMediaType() error {
	return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: "+strings.Join(supportedTypes, ", "))
}

// statusError builds an API error with the given code, reason and message.
func statusError(code int32, reason metav1.StatusReason, msg string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}

// encodeCache remembers an object's encodings so a change seen by many
// watchers is encoded once per format.
type encodeCache struct {
	mu    sync.Mutex
	bytes map[string][]byte
}

func (c *encodeCache) get(f *format, obj runtime.Object) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.bytes[f.mediaType]; ok {
		return b, nil
	}
	var buf bytes.Buffer
	if err := f.info.Serializer.Encode(obj, &buf); err != nil {
		return nil, err
	}
	if c.bytes == nil {
		c.bytes = map[string][]byte{}
	}
	c.bytes[f.mediaType] = buf.Bytes()
	return buf.Bytes(), nil
}

// writeObject writes obj with the given status code in the negotiated format.
func writeObject(w http.ResponseWriter, f *format, code int, obj runtime.Object) {
	var buf bytes.Buffer
	if err := f.info.Serializer.Encode(obj, &buf); err != nil {
		writeError(w, f, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", f.mediaType)
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// writeError writes err as a metav1.Status, with its code.
func writeError(w http.ResponseWriter, f *format, err error) {
	status := apiStatus(err)
	if f == nil {
		f = formats[mediaJSON]
	}
	status.Kind, status.APIVersion = "Status", "v1"
	var buf bytes.Buffer
	if err := f.info.Serializer.Encode(status, &buf); err != nil {
		http.Error(w, status.Message, int(status.Code))
		return
	}
	w.Header().Set("Content-Type", f.mediaType)
	w.WriteHeader(int(status.Code))
	w.Write(buf.Bytes())
}

// apiStatus converts any error into the Status kube-apiserver would send.
func apiStatus(err error) *metav1.Status {
	if s, ok := err.(apierrors.APIStatus); ok {
		st := s.Status()
		if st.Status == "" {
			st.Status = metav1.StatusFailure
		}
		return &st
	}
	st := apierrors.NewInternalError(err).Status()
	return &st
}
