// Package cniwire is what podtrace's CNI plugin (cmd/podtrace-cni) and
// podtrace say to each other over a unix socket while containerd runs the
// plugin: the plugin asks before its ADD or DEL (podtrace may answer with
// a fault, or hold it at a breakpoint), then reports what the delegated
// plugin did. It uses the standard library only, so the plugin stays small.
package cniwire

import (
	"encoding/json"
	"net"
	"time"
)

// Request is the plugin's question before it delegates a command.
type Request struct {
	// Command is ADD or DEL.
	Command string `json:"command"`
	// Node is the node whose containerd runs the plugin (from its config).
	Node string `json:"node"`
	// Namespace, Name and UID are the pod's (containerd's K8S_POD_* CNI
	// arguments; UID may be empty on older containerd).
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
	// Sandbox is the sandbox (infra container) ID.
	Sandbox string `json:"sandbox"`
	// IfName is the interface inside the pod's network namespace.
	IfName string `json:"ifName"`
}

// Verdict is podtrace's answer: an empty Error lets the command go ahead.
type Verdict struct {
	Error string `json:"error,omitempty"`
}

// Report is what the delegated plugin did.
type Report struct {
	// IP is the pod's address (ADD), with its prefix length.
	IP string `json:"ip,omitempty"`
	// Error is the delegated plugin's error, if any.
	Error string `json:"error,omitempty"`
	// Duration is how long the delegated command took.
	Duration time.Duration `json:"duration"`
}

// Conn is one exchange: Request, Verdict, then Report.
type Conn struct {
	c   net.Conn
	enc *json.Encoder
	dec *json.Decoder
}

// Wrap makes c a Conn.
func Wrap(c net.Conn) *Conn {
	return &Conn{c: c, enc: json.NewEncoder(c), dec: json.NewDecoder(c)}
}

// Send writes one message.
func (c *Conn) Send(v any) error { return c.enc.Encode(v) }

// Receive reads one message into v.
func (c *Conn) Receive(v any) error { return c.dec.Decode(v) }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }
