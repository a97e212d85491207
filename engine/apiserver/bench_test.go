package apiserver_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/podtrace/podtrace/engine/enginetest"
)

const benchWriters = 64

// BenchmarkPodCreateVsEtcdPut compares pod creates through the whole API
// pipeline (HTTPS, authn, authz, admission, validation, etcd) with raw etcd
// Puts of the same bytes, at the same concurrency (64 writers) and with
// fsync on for both, in the same run. Run with -benchtime=1x.
func BenchmarkPodCreateVsEtcdPut(b *testing.B) {
	env, n, value := benchSetup(b)
	ctx := context.Background()
	// Each writer is its own client with its own connection, as 64
	// controllers or kubectls would be, speaking protobuf as kube components do.
	clients := make([]kubernetes.Interface, benchWriters)
	for w := range clients {
		cfg := env.AdminConfig()
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		cfg.Dial = (&net.Dialer{}).DialContext // a transport (and connection) of its own
		clients[w] = kubernetes.NewForConfigOrDie(cfg)
	}
	for w, c := range clients {
		warm(b, c, w)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		raw, rawCPU := rawPuts(env, i, n, value)
		apiCPU := cpuTime()
		api := parallel(n, func(j int) error {
			c := clients[j%benchWriters]
			_, err := c.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("bench-%d-%d", i, j)), metav1.CreateOptions{})
			return err
		})
		apiCPU = cpuTime() - apiCPU
		b.ReportMetric(float64(rawCPU.Microseconds())/float64(n), "cpu-µs/put")
		b.ReportMetric(float64(apiCPU.Microseconds())/float64(n), "cpu-µs/create")
		b.ReportMetric(float64(n)/raw.Seconds(), "etcd-puts/s")
		b.ReportMetric(float64(n)/api.Seconds(), "api-creates/s")
		b.ReportMetric(raw.Seconds()/api.Seconds(), "ratio")
	}
}

// benchSetup starts a control plane for a create-vs-Put benchmark (fsync on
// unless BENCH_NOFSYNC is set) and returns it, the number of writes per phase
// (BENCH_N, default 3,000) and a pod's protobuf bytes, the raw Puts' value.
func benchSetup(b *testing.B) (*enginetest.Env, int, string) {
	env := enginetest.Start(b, enginetest.Options{Fsync: os.Getenv("BENCH_NOFSYNC") == "", NoRecording: true})
	n := 3000
	if v, _ := strconv.Atoi(os.Getenv("BENCH_N")); v > 0 {
		n = v
	}
	p := pod("template")
	p.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	var buf bytesBuffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(p, &buf); err != nil {
		b.Fatal(err)
	}
	return env, n, string(buf)
}

// rawPuts puts value under n keys of round i with benchWriters writers and
// returns the wall and CPU time it took.
func rawPuts(env *enginetest.Env, i, n int, value string) (wall, cpu time.Duration) {
	cpu = cpuTime()
	wall = parallel(n, func(j int) error {
		_, err := env.Etcd.Client.Put(context.Background(), fmt.Sprintf("/bench/raw/%d/%d", i, j), value)
		return err
	})
	return wall, cpuTime() - cpu
}

// cpuTime returns the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type bytesBuffer []byte

func (b *bytesBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

// warm makes sure the client's connection and the server's caches are up.
func warm(b *testing.B, c kubernetes.Interface, w int) {
	if _, err := c.CoreV1().Pods("default").Create(context.Background(), pod(fmt.Sprintf("warm-%d", w)), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}

// parallel runs op for 0..n-1 on benchWriters goroutines and returns the wall time.
func parallel(n int, op func(int) error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for w := 0; w < benchWriters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1)) - 1
				if j >= n {
					return
				}
				if err := op(j); err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		panic(err)
	}
	return time.Since(start)
}
