package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
)

// The suite's client does not run at client-go's default 5 requests/s
// (about 2 s of queueing per probe pair on a fleet): a kubeconfig without
// its own rate gets ClientQPS/ClientBurst.
func TestRESTConfigClientRate(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: x}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`), 0o600)
	cfg, where, err := RESTConfig(kc, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != ClientQPS || cfg.Burst != ClientBurst || where == "" {
		t.Fatalf("QPS %v Burst %d (from %s), want %d/%d", cfg.QPS, cfg.Burst, where, ClientQPS, ClientBurst)
	}
}

// The client's own limit must not throttle a fleet run whose
// round starts every pair at once: the rate grows with the nodes, never
// below the defaults, and a kubeconfig's own rate is kept.
func TestScaleClientRate(t *testing.T) {
	for _, tc := range []struct {
		nodes     int
		qps       float32
		burst     int
		wantQPS   float32
		wantBurst int
		changed   bool
	}{
		{2, ClientQPS, ClientBurst, ClientQPS, ClientBurst, false},
		{256, ClientQPS, ClientBurst, 1024, 2048, true},
		{1024, ClientQPS, ClientBurst, 4096, 8192, true},
		{1024, 20, 30, 20, 30, false}, // the kubeconfig's own rate
	} {
		cfg := &rest.Config{QPS: tc.qps, Burst: tc.burst}
		if got := ScaleClientRate(cfg, tc.nodes); got != tc.changed || cfg.QPS != tc.wantQPS || cfg.Burst != tc.wantBurst {
			t.Errorf("%d nodes from %v/%d: changed %v, %v/%d; want %v, %v/%d", tc.nodes, tc.qps, tc.burst, got, cfg.QPS, cfg.Burst, tc.changed, tc.wantQPS, tc.wantBurst)
		}
	}
}
