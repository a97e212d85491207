package agnhost

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/pflag"
)

// nettestState is agnhost nettest's State, which /read answers verbatim
// (the PreStop spec reads Received["prestop"] there).
type nettestState struct {
	Hostname             string
	Sent                 map[string]int
	Received             map[string]int
	Errors               []string
	Log                  []string
	StillContactingPeers bool

	mu sync.Mutex
}

// nettestWrite is the body of a POST to /write (agnhost's WritePost).
type nettestWrite struct {
	Source string
	Dest   string
}

// nettestSearch is how long agnhost nettest looks for peers when it
// finds none, paced as upstream's contactOthers: it reads the service's
// endpoints every max(5 s, peers/10 s) until max(5 min, peers s) have
// passed, then contacts them in 15 rounds with that sleep after each
// (375 s for the default 8 peers, 2500 s for 1000).
func nettestSearch(peers int) time.Duration {
	sleep := max(5*time.Second, time.Duration(peers/10)*time.Second)
	timeout := max(5*time.Minute, time.Duration(peers)*time.Second)
	tries := (timeout + sleep - 1) / sleep // a try, then a sleep, until timeout
	return tries*sleep + 15*sleep
}

// nettest is agnhost nettest: HTTP on --port (8080) with /read (the
// state as indented JSON), /write (a peer's {"Source": ...} counted in
// Received, answered {"Hostname": ...}), /status (pass, running or fail
// against --peers) and /quit (exit 0). Not simulated: the peer search
// (agnhost asks the API server for --service's endpoints, which a
// simulated pod cannot reach): it finds no peers, and /status says
// running until the search would have given up, then fail.
func (c *cmd) nettest(ctx context.Context, fs *pflag.FlagSet, args []string) (int, error) {
	port := fs.Int("port", 8080, "Port number to serve at.")
	peers := fs.Int("peers", 8, "Must find at least this many peers for the test to pass.")
	svcName := fs.String("service", "nettest", "Service to find other network test pods in.")
	namespace := fs.String("namespace", "default", "Namespace of this pod.")
	fs.Int("delay-shutdown", 0, "Number of seconds to delay shutdown when receiving SIGTERM.")
	if err := fs.Parse(args); err != nil {
		return 1, nil
	}
	log := newLogger(c.p.Stderr)
	if *svcName == "" {
		log.printf("Must provide -service flag.")
		return 1, nil
	}
	s := &nettestState{Hostname: c.p.Hostname, StillContactingPeers: true}
	search := func(ctx context.Context, _ func(int)) {
		if c.p.Sleep(ctx, nettestSearch(*peers)) == nil {
			s.mu.Lock()
			s.StillContactingPeers = false
			s.mu.Unlock()
		}
	}
	return c.serveExiting(ctx, search, func(exit func(int)) []service {
		mux := http.NewServeMux()
		mux.HandleFunc("/quit", func(http.ResponseWriter, *http.Request) { exit(0) })
		mux.HandleFunc("/read", s.read)
		mux.HandleFunc("/write", s.write)
		mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, s.status(*peers, *namespace+"/"+*svcName))
		})
		return []service{{port: *port, handler: mux}}
	})
}

// read answers the state as indented JSON.
func (s *nettestState) read(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	b, err := json.MarshalIndent(s, "", "\t")
	s.appendErr(err)
	_, err = w.Write(b)
	s.appendErr(err)
}

// write counts a peer's contact by its Source and answers this host's name.
func (s *nettestState) write(w http.ResponseWriter, r *http.Request) {
	defer r.Body.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
	var wp nettestWrite
	s.appendErr(json.NewDecoder(r.Body).Decode(&wp))
	if wp.Source == "" {
		s.appendErr(fmt.Errorf("%v: Got request with no source", s.Hostname))
	} else {
		if s.Received == nil {
			s.Received = map[string]int{}
		}
		s.Received[wp.Source]++
	}
	s.appendErr(json.NewEncoder(w).Encode(struct{ Hostname string }{s.Hostname}))
}

// status is "pass" once peers were both sent to and heard from, "running"
// while the search goes on, else "fail" (logged in the state).
func (s *nettestState) status(peers int, service string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(s.Sent) >= peers && len(s.Received) >= peers:
		return "pass"
	case s.StillContactingPeers:
		return "running"
	}
	s.Log = append(s.Log, fmt.Sprintf("Declaring failure for %s with %d sent and %d received and %d peers", service, len(s.Sent), len(s.Received), peers))
	if len(s.Log) > 500 {
		s.Log = s.Log[1:]
	}
	return "fail"
}

// appendErr records err, if any; s must be locked.
func (s *nettestState) appendErr(err error) {
	if err != nil {
		s.Errors = append(s.Errors, err.Error())
	}
}
