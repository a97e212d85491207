// Command demo is podtrace's HTTP demo server: it answers every request
// with the pod's hostname and the path, serves /healthz for probes, logs
// one line per request on stdout and shuts down cleanly on SIGTERM.
// podtrace compiles it statically into the podtrace.dev/demo image.
//
// Two helper modes serve exec probes and hooks in an image without a shell:
// "demo get [PATH]" fetches PATH from the local server and exits 1 unless
// it answers 2xx; "demo echo WORDS..." prints its words (exit 0), and
// "demo fail WORDS..." prints them on stderr and exits 1.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	if len(os.Args) > 1 {
		os.Exit(helper(port, os.Args[1], os.Args[2:]))
	}
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("%s %s %s from %s\n", time.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path, r.RemoteAddr)
		fmt.Fprintf(w, "hello from %s, you asked for %s\n", host, r.URL.Path)
	})
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-stop
		fmt.Printf("received %v, shutting down\n", s)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	fmt.Printf("demo server %s listening on :%s\n", host, port)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("bye")
}

// helper runs the get, echo and fail modes and returns the exit code.
func helper(port, mode string, args []string) int {
	switch mode {
	case "get":
		path := "/healthz"
		if len(args) > 0 {
			path = args[0]
		}
		c := &http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://127.0.0.1:" + port + path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer resp.Body.Close()
		fmt.Println(resp.Status)
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return 1
		}
		return 0
	case "echo":
		fmt.Println(strings.Join(args, " "))
		return 0
	case "fail":
		fmt.Fprintln(os.Stderr, strings.Join(args, " "))
		return 1
	}
	fmt.Fprintf(os.Stderr, "usage: demo [get [PATH] | echo WORDS... | fail WORDS...]\n")
	return 2
}
