package agnhost

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
)

// Agnhost guestbook's timings: a replica tries to register with its
// primary for 15 s, a second apart, then exits 1.
const (
	guestbookRegisterTimeout = 15 * time.Second
	guestbookRetry           = time.Second
)

// guestbookServer is one agnhost guestbook process: its key-value store,
// and as a primary the addresses of the replicas it pushes updates to.
type guestbookServer struct {
	c           *cmd
	log         *logger
	backendPort string

	mu       sync.Mutex
	store    map[string]any
	replicas []string
}

// guestbook is agnhost guestbook, the Kubectl Guestbook spec's
// application: HTTP on --http-port (80) with /get, /set, /register
// and /guestbook (a frontend: "set" goes to agnhost-primary and "get" to
// agnhost-replica, on --backend-port, 6379), answering as agnhost does.
// With --replicaof HOST it registers with that primary's /register (its
// own pod address as host) and takes its store; the primary then passes
// each /set on to its replicas. A replica that cannot register within
// 15 s exits 1.
func (c *cmd) guestbook(ctx context.Context, fs *pflag.FlagSet, args []string) (int, error) {
	httpPort := fs.String("http-port", "80", "HTTP Listen Port")
	backendPort := fs.String("backend-port", "6379", "Backend's HTTP Listen Port")
	replicaOf := fs.String("replicaof", "", "The host's name to register to")
	if err := fs.Parse(args); err != nil {
		return 1, nil
	}
	g := &guestbookServer{c: c, log: newLogger(c.p.Stderr), backendPort: *backendPort, store: map[string]any{}}
	port, err := strconv.Atoi(*httpPort)
	if err != nil {
		g.log.printf("listen tcp: lookup tcp/%s: unknown port", *httpPort)
		return 1, nil
	}
	register := func(ctx context.Context, exit func(int)) { g.register(ctx, *replicaOf, exit) }
	return c.serveExiting(ctx, register, func(exit func(int)) []service {
		mux := http.NewServeMux()
		mux.HandleFunc("/register", g.registerHandler)
		mux.HandleFunc("/get", g.getHandler)
		mux.HandleFunc("/set", g.setHandler)
		mux.HandleFunc("/guestbook", g.guestbookHandler)
		return []service{{port: port, handler: mux}}
	})
}

// register makes this server a replica of primary, retrying a second
// apart for 15 s; failing that, or on an answer it cannot read, the
// process exits 1 (agnhost's log.Fatal).
func (g *guestbookServer) register(ctx context.Context, primary string, exit func(int)) {
	if primary == "" {
		return
	}
	hostPort := net.JoinHostPort(primary, g.backendPort)
	retry := func(format string, a ...any) bool {
		g.log.printf(format+" Retrying in %s.", append(a, guestbookRetry)...)
		return g.c.p.Sleep(ctx, guestbookRetry) == nil
	}
	// The time counts on the runtime's clock, the one retry sleeps on.
	for waited := time.Duration(0); waited < guestbookRegisterTimeout; waited += guestbookRetry {
		primaryIP := g.c.p.Resolve(ctx, primary)
		host, err := g.localIP(ctx, primary, primaryIP)
		if err != nil {
			if !retry("unable to get IP %s: %v.", hostPort, err) {
				return
			}
			continue
		}
		request := "register?host=" + host.String()
		g.log.printf("Registering to primary: %s/%s", hostPort, request)
		response, err := g.c.dialHTTP(ctx, request, net.JoinHostPort(primaryIP.String(), g.backendPort))
		if err != nil {
			if !retry("encountered error while registering to primary: %v.", err) {
				return
			}
			continue
		}
		var answer map[string]any
		if err := json.Unmarshal([]byte(response), &answer); err != nil {
			g.log.printf("Error while unmarshaling primary's response: %v", err)
			exit(1)
			return
		}
		store, ok := answer["data"].(map[string]any)
		if !ok {
			g.log.printf("Could not cast responseJSON: %s", answer["data"])
			exit(1)
			return
		}
		g.mu.Lock()
		g.store = store
		g.mu.Unlock()
		g.log.printf("Registered to node: %s", primary)
		return
	}
	if ctx.Err() == nil {
		g.log.printf("Timed out while registering to primary.")
		exit(1)
	}
}

// localIP is the address this pod reaches host from, as agnhost finds it
// (a UDP socket's local address): the pod's own, which its /etc/hosts
// gives for its host name. It fails as the dial does when host did not
// resolve (hostIP nil).
func (g *guestbookServer) localIP(ctx context.Context, host string, hostIP net.IP) (net.IP, error) {
	if hostIP == nil {
		return nil, fmt.Errorf("dial udp: lookup %s: no such host", host)
	}
	if ip := g.c.p.Resolve(ctx, g.c.p.Hostname); ip != nil {
		return ip, nil
	}
	return nil, fmt.Errorf("dial udp: lookup %s: no such host", g.c.p.Hostname)
}

// registerHandler adds ?host= to the replicas and answers the whole store.
func (g *guestbookServer) registerHandler(w http.ResponseWriter, r *http.Request) {
	ip := r.URL.Query().Get("host")
	g.log.printf("GET /register?host=%s", ip)
	g.mu.Lock()
	defer g.mu.Unlock()
	writeJSON(w, map[string]any{"data": g.store})
	g.replicas = append(g.replicas, ip)
	g.log.printf("Node '%s' registered.", ip)
}

// getHandler answers {"data": value} for ?key= ("" when unset), or the
// whole store without a key.
func (g *guestbookServer) getHandler(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	g.log.printf("GET /get?key=%s", key)
	g.mu.Lock()
	defer g.mu.Unlock()
	var value any = g.store
	if key != "" {
		if value = g.store[key]; value == nil {
			value = ""
		}
	}
	writeJSON(w, map[string]any{"data": value})
}

// setHandler stores ?key= and ?value=, passes the pair on to every
// replica, and answers {"message":"Updated"}.
func (g *guestbookServer) setHandler(w http.ResponseWriter, r *http.Request) {
	key, value := r.URL.Query().Get("key"), r.URL.Query().Get("value")
	g.log.printf("GET /set?key=%s&value=%s", key, value)
	if key == "" {
		http.Error(w, "cannot set with empty key.", http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	g.store[key] = value
	replicas := g.replicas
	g.mu.Unlock()
	request := fmt.Sprintf("set?key=%s&value=%s", key, value)
	for _, replica := range replicas {
		if _, err := g.c.dialHTTP(r.Context(), request, net.JoinHostPort(replica, g.backendPort)); err != nil {
			http.Error(w, fmt.Sprintf("encountered error while propagating to replica '%s': %v", replica, err), http.StatusExpectationFailed)
			return
		}
	}
	writeJSON(w, map[string]string{"message": "Updated"})
}

// guestbookHandler is the frontend's: ?cmd=set goes to agnhost-primary's
// /set, ?cmd=get to agnhost-replica's /get, and their answer is its own.
func (g *guestbookServer) guestbookHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cmd, key, value := strings.ToLower(q.Get("cmd")), q.Get("key"), q.Get("value")
	g.log.printf("GET /guestbook?cmd=%s&key=%s&value=%s", cmd, key, value)
	switch {
	case cmd != "get" && cmd != "set":
		http.Error(w, fmt.Sprintf("unsupported cmd: '%s'", cmd), http.StatusBadRequest)
		return
	case cmd == "set" && key == "":
		http.Error(w, "cannot set with empty key.", http.StatusBadRequest)
		return
	}
	host := "agnhost-primary"
	if cmd == "get" {
		host = "agnhost-replica"
	}
	ip := g.c.p.Resolve(r.Context(), host)
	if ip == nil {
		http.Error(w, fmt.Sprintf("host and/or port param are invalid. lookup %s: no such host", host), http.StatusBadRequest)
		return
	}
	response, err := g.c.dialHTTP(r.Context(), fmt.Sprintf("%s?key=%s&value=%s", cmd, key, value), net.JoinHostPort(ip.String(), g.backendPort))
	if err != nil {
		http.Error(w, fmt.Sprintf("encountered error: %v", err), http.StatusExpectationFailed)
		return
	}
	fmt.Fprint(w, response)
}
