package apiserver

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// parsePredicate reads labelSelector and fieldSelector, refusing field
// labels the resource does not support, as kube-apiserver does.
func parsePredicate(res *Resource, namespace string, r *http.Request) (predicate, error) {
	q := r.URL.Query()
	p := predicate{namespace: namespace}
	var err error
	if p.label, err = labels.Parse(q.Get("labelSelector")); err != nil {
		return p, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	if p.field, err = fields.ParseSelector(q.Get("fieldSelector")); err != nil {
		return p, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	known := res.objectFields(res.New())
	for _, req := range p.field.Requirements() {
		if _, ok := known[req.Field]; !ok {
			return p, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	return p, nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, res *Resource, ns, name string, acc accepted) {
	var obj runtime.Object
	if r.URL.Query().Get("resourceVersion") == "0" {
		obj = s.cachers[res].get(ns, name)
	}
	if obj == nil {
		var err error
		if obj, err = s.stores[res].get(r.Context(), ns, name); err != nil {
			writeError(w, acc.format, err)
			return
		}
	}
	s.respond(w, acc, http.StatusOK, res, obj)
}

// list serves a collection: from the watch cache when resourceVersion is
// given (as kube-apiserver does for "0" and NotOlderThan), otherwise a
// consistent read from etcd.
func (s *Server) list(w http.ResponseWriter, r *http.Request, res *Resource, ns string, acc accepted) {
	p, err := parsePredicate(res, ns, r)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	q := r.URL.Query()
	var items []runtime.Object
	var rv int64
	if rvs := q.Get("resourceVersion"); rvs != "" {
		min, err := parseRV(rvs)
		if err != nil {
			writeError(w, acc.format, err)
			return
		}
		if err := s.cachers[res].waitFresh(r.Context(), min); err != nil {
			writeError(w, acc.format, err)
			return
		}
		items, rv, err = s.cachers[res].list(r.Context(), p)
		if err != nil {
			writeError(w, acc.format, err)
			return
		}
	} else {
		all, rev, err := s.stores[res].list(r.Context(), ns)
		if err != nil {
			writeError(w, acc.format, err)
			return
		}
		rv = rev
		for _, o := range all {
			if p.matches(s.cachers[res].newCached(o)) {
				items = append(items, o)
			}
		}
	}
	list := res.NewList()
	if err := meta.SetList(list, items); err != nil {
		writeError(w, acc.format, apierrors.NewInternalError(err))
		return
	}
	lm, _ := meta.ListAccessor(list)
	lm.SetResourceVersion(strconv.FormatInt(rv, 10))
	list.GetObjectKind().SetGroupVersionKind(res.GVR.GroupVersion().WithKind(res.Kind + "List"))
	s.respond(w, acc, http.StatusOK, res, list)
}

// respond writes obj, as a Table when the client asked for one.
func (s *Server) respond(w http.ResponseWriter, acc accepted, code int, res *Resource, obj runtime.Object) {
	if acc.table {
		table, err := s.toTable(res, obj, acc.include)
		if err != nil {
			writeError(w, acc.format, err)
			return
		}
		obj = table
	}
	writeObject(w, acc.format, code, obj)
}

// watch streams changes as kube-apiserver does: newline-delimited JSON
// WatchEvents, or length-delimited protobuf frames.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, res *Resource, ns, name string, acc accepted) {
	p, err := parsePredicate(res, ns, r)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	if name != "" {
		p.field = fields.AndSelectors(p.field, fields.OneTermEqualSelector("metadata.name", name))
	}
	q := r.URL.Query()
	rv, err := parseRV(q.Get("resourceVersion"))
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	sendInitial := q.Get("sendInitialEvents") == "true"
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	initial := sendInitial || rv == 0
	timeout := 30 * time.Minute
	if t, err := strconv.Atoi(q.Get("timeoutSeconds")); err == nil && t > 0 {
		timeout = time.Duration(t) * time.Second
	}
	wt, err := s.cachers[res].watch(r.Context(), rv, initial, sendInitial && bookmarks, p)
	if err != nil {
		writeError(w, acc.format, err)
		return
	}
	defer wt.stop(nil)
	f := acc.format
	stream := f.info.StreamSerializer
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", f.mediaType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	// Events are gathered in a buffer and sent together when the watcher has
	// nothing more queued: fewer HTTP/2 frames, TLS records and writes than
	// the response writer's own 4 KB buffer would give for pod-sized events.
	bw := bufio.NewWriterSize(w, 32<<10)
	fw := stream.Framer.NewFrameWriter(bw)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	go func() {
		select {
		case <-timer.C:
		case <-r.Context().Done():
		}
		wt.stop(nil)
	}()
	var buf []queued
	var out bytes.Buffer
	headersSent := false
	for {
		var ok bool
		buf, ok = wt.next(buf)
		if !ok {
			return
		}
		for _, e := range buf {
			if e.ch == nil { // the end of the initial events
				if err := s.writeBookmark(fw, f, res, wt.initialRV, true); err != nil {
					return
				}
				continue
			}
			raw, err := s.watchObject(f, acc, res, e, &headersSent)
			if err != nil {
				return
			}
			out.Reset()
			ev := &metav1.WatchEvent{Type: string(e.typ), Object: runtime.RawExtension{Raw: raw}}
			if err := stream.Serializer.Encode(ev, &out); err != nil {
				return
			}
			if _, err := fw.Write(out.Bytes()); err != nil {
				return
			}
		}
		if bw.Flush() != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// watchObject encodes a queued event's object, as a one-row Table when the
// client watches with as=Table (kubectl get -w): as kube-apiserver does,
// only the first event's table carries the column definitions.
func (s *Server) watchObject(f *format, acc accepted, res *Resource, e queued, headersSent *bool) ([]byte, error) {
	obj, enc := e.object()
	if !acc.table {
		return enc.get(f, obj)
	}
	table, err := s.toTable(res, obj, acc.include)
	if err != nil {
		return nil, err
	}
	if *headersSent {
		table.ColumnDefinitions = nil
	}
	*headersSent = true
	var buf bytes.Buffer
	if err := f.info.Serializer.Encode(table, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeBookmark sends a BOOKMARK event at rv; initialEnd marks the end of
// the initial events of a sendInitialEvents watch.
func (s *Server) writeBookmark(fw interface{ Write([]byte) (int, error) }, f *format, res *Resource, rv int64, initialEnd bool) error {
	obj := res.New()
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.FormatInt(rv, 10))
	if initialEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	var raw, out bytes.Buffer
	if err := f.info.Serializer.Encode(obj, &raw); err != nil {
		return err
	}
	ev := &metav1.WatchEvent{Type: string(watch.Bookmark), Object: runtime.RawExtension{Raw: raw.Bytes()}}
	if err := f.info.StreamSerializer.Serializer.Encode(ev, &out); err != nil {
		return err
	}
	_, err := fw.Write(out.Bytes())
	return err
}
