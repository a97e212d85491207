package attach

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/stages"
)

// auditEvent is the part of an audit.k8s.io/v1 Event that attach reads.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Reason  string `json:"reason"`
	} `json:"responseStatus"`
	ResponseObject *struct {
		Metadata struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"metadata"`
	} `json:"responseObject"`
	RequestReceived time.Time         `json:"requestReceivedTimestamp"`
	StageTimestamp  time.Time         `json:"stageTimestamp"`
	Annotations     map[string]string `json:"annotations"`
}

var auditKinds = map[string]string{"pods": stages.KindPod, "replicasets": stages.KindReplicaSet, "deployments": stages.KindDeployment}

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true}

// AuditEvents maps one audit log line (an audit.k8s.io/v1 Event at
// ResponseComplete or Panic) to authn, authz and admission events of the
// object written: writes of pods, replicasets and deployments only, as the
// embedded API server reports them. Other lines give nothing. A create is
// named by its response object, so the audit policy must log at Request
// level or above for generateName pods to be identified.
func AuditEvents(line []byte) ([]stages.Event, error) {
	var a auditEvent
	if err := json.Unmarshal(line, &a); err != nil {
		return nil, err
	}
	if a.Stage != "ResponseComplete" && a.Stage != "Panic" || a.ObjectRef == nil || !writeVerbs[a.Verb] ||
		a.ObjectRef.Subresource != "" {
		return nil, nil
	}
	kind, ok := auditKinds[a.ObjectRef.Resource]
	if !ok {
		return nil, nil
	}
	name, uid := a.ObjectRef.Name, ""
	if a.ResponseObject != nil && a.ResponseObject.Metadata.Name != "" {
		name, uid = a.ResponseObject.Metadata.Name, a.ResponseObject.Metadata.UID
	}
	if name == "" {
		return nil, nil
	}
	code, msg, reason := 200, "", ""
	if a.ResponseStatus != nil {
		code, msg, reason = a.ResponseStatus.Code, a.ResponseStatus.Message, a.ResponseStatus.Reason
	}
	base := stages.Event{Kind: kind, Namespace: a.ObjectRef.Namespace, Pod: name, UID: uid, Component: apiserver,
		User: a.User.Username, UserAgent: a.UserAgent, Verb: a.Verb, Time: a.StageTimestamp}
	dur := 0.0
	if a.StageTimestamp.After(a.RequestReceived) {
		dur = float64(a.StageTimestamp.Sub(a.RequestReceived)) / float64(time.Millisecond)
	}
	mk := func(stage stages.ID, st stages.Status, r, m string) stages.Event {
		e := base
		e.Stage, e.Status, e.Reason, e.Message = stage, st, r, m
		if st.Terminal() {
			e.DurationMs = dur
		}
		return e
	}
	if code == 401 {
		return []stages.Event{mk(stages.Authn, stages.Failed, "Unauthorized", msg)}, nil
	}
	out := []stages.Event{mk(stages.Authn, stages.Succeeded, "", "")}
	decision := a.Annotations["authorization.k8s.io/decision"]
	why := a.Annotations["authorization.k8s.io/reason"]
	if decision == "forbid" {
		return append(out, mk(stages.Authz, stages.Failed, reasonOr(reason, "Forbidden"), msg)), nil
	}
	out = append(out, mk(stages.Authz, stages.Succeeded, "", why))
	if code >= 400 && (code == 403 || code == 422 || code == 400 || code == 409 || code == 404) {
		return append(out, mk(stages.Admission, stages.Failed, reasonOr(reason, "Invalid"), msg)), nil
	}
	return append(out, mk(stages.Admission, stages.Succeeded, "", "")), nil
}

func reasonOr(r, def string) string {
	if r == "" {
		return def
	}
	return r
}

// TailAudit follows an audit log (JSON lines, as --audit-log-path writes
// them), from its beginning, and adds the API stages of every write it
// records to the watcher's lanes (in the namespace and target) until ctx
// is done. A line that is not JSON is skipped: the API server may be in the
// middle of writing it.
func (w *Watcher) TailAudit(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	go func() {
		defer f.Close()
		r := bufio.NewReaderSize(f, 1<<20)
		var partial []byte
		for {
			line, err := r.ReadBytes('\n')
			partial = append(partial, line...)
			if err == io.EOF {
				select {
				case <-ctx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			if err != nil {
				return
			}
			if s := strings.TrimSpace(string(partial)); s != "" {
				if evs, err := AuditEvents([]byte(s)); err == nil {
					w.addAudit(evs)
				}
			}
			partial = partial[:0]
		}
	}()
	return nil
}

// addAudit queues one request's API stage events, each request once.
func (w *Watcher) addAudit(evs []stages.Event) {
	if len(evs) == 0 {
		return
	}
	e := evs[0]
	if w.cfg.Namespace != "" && e.Namespace != w.cfg.Namespace || !w.wants(e.Kind, e.Namespace, e.Pod) {
		return
	}
	uid := types.UID(e.UID)
	if uid == "" {
		w.mu.Lock()
		uid = w.uids[e.Kind+"/"+e.Namespace+"/"+e.Pod]
		w.mu.Unlock()
	}
	items := make([]item, len(evs))
	for i, ev := range evs {
		ev.UID = string(uid)
		items[i] = item{key: string(ev.Stage) + "|audit|" + ev.Verb + "|" + ev.Time.Format(time.RFC3339Nano), ev: ev}
	}
	w.add(uid, true, items)
}
