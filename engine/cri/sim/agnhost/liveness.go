package agnhost

import (
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// livenessAlive is how long agnhost liveness reports itself healthy (a
// variable for the tests).
var livenessAlive = 10 * time.Second

// liveness is agnhost liveness: on port 8080, /healthz answers 200 "ok"
// for its first 10 seconds and 500 after (the liveness probes' specs
// count the restarts that follow), /started how long it has run, and
// /redirect?loc= redirects there.
func liveness() []service {
	started := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/started", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, time.Since(started).String())
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if d := time.Since(started); d > livenessAlive {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "error: %v", d.Seconds())
			return
		}
		fmt.Fprint(w, "ok")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		loc, err := url.QueryUnescape(r.URL.Query().Get("loc"))
		if err != nil {
			http.Error(w, fmt.Sprintf("invalid redirect: %q", r.URL.Query().Get("loc")), http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, loc, http.StatusFound)
	})
	return []service{{port: 8080, handler: mux}}
}
