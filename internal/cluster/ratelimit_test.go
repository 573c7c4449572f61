package cluster

import (
	"os"
	"path/filepath"
	"testing"
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
