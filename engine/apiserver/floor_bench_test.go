package apiserver_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// BenchmarkHTTPSFloorVsEtcdPut measures the floor under
// BenchmarkPodCreateVsEtcdPut: the same 64 client-go writers creating pods
// over HTTPS/HTTP2 with protobuf, against a server that does nothing but
// read the body and answer 201 with a stored pod's bytes (no authn, authz,
// admission, validation or etcd), next to raw etcd Puts in the same run.
// Its ratio is what the create ratio could reach if the API server's own
// work and its etcd write cost nothing. Run with -benchtime=1x.
func BenchmarkHTTPSFloorVsEtcdPut(b *testing.B) {
	env, n, value := benchSetup(b)
	ctx := context.Background()
	answer := []byte(value)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(answer)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	b.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	clients := make([]kubernetes.Interface, benchWriters)
	for w := range clients {
		clients[w] = kubernetes.NewForConfigOrDie(&rest.Config{
			Host:            srv.URL,
			TLSClientConfig: rest.TLSClientConfig{CAData: ca, ServerName: "example.com"},
			ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf",
				AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json"},
			QPS: -1, Dial: (&net.Dialer{}).DialContext,
		})
		warm(b, clients[w], w)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		raw, rawCPU := rawPuts(env, i, n, value)
		floorCPU := cpuTime()
		floor := parallel(n, func(j int) error {
			_, err := clients[j%benchWriters].CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("bench-%d-%d", i, j)), metav1.CreateOptions{})
			return err
		})
		floorCPU = cpuTime() - floorCPU
		b.ReportMetric(float64(rawCPU.Microseconds())/float64(n), "cpu-µs/put")
		b.ReportMetric(float64(floorCPU.Microseconds())/float64(n), "cpu-µs/request")
		b.ReportMetric(float64(n)/raw.Seconds(), "etcd-puts/s")
		b.ReportMetric(float64(n)/floor.Seconds(), "requests/s")
		b.ReportMetric(raw.Seconds()/floor.Seconds(), "ratio")
	}
}
