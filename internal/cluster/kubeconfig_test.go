package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeKubeconfig(t *testing.T, path, server, context string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	body := `apiVersion: v1
kind: Config
clusters:
- name: c-` + context + `
  cluster: {server: "` + server + `"}
users:
- name: u-` + context + `
  user: {token: x}
contexts:
- name: ` + context + `
  context: {cluster: c-` + context + `, user: u-` + context + `}
current-context: ` + context + `
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The cluster is found as kubectl finds it: --kubeconfig, then every file
// of $KUBECONFIG (merged, the first file's current context wins), then
// ~/.kube/config, then the pod's ServiceAccount.
func TestRESTConfigResolvesAsKubectlDoes(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")

	if _, _, err := RESTConfig("", ""); !errors.Is(err, ErrNoCluster) {
		t.Fatalf("nothing anywhere: err = %v, want ErrNoCluster", err)
	}
	if strings.Contains(ErrNoCluster.Error(), "go test") || !strings.Contains(ErrNoCluster.Error(), "~/.kube/config") {
		t.Errorf("ErrNoCluster must name the ways to give a cluster, for any command: %v", ErrNoCluster)
	}

	writeKubeconfig(t, filepath.Join(home, ".kube", "config"), "https://10.0.0.1:6443", "home")
	cfg, where, err := RESTConfig("", "")
	if err != nil || cfg.Host != "https://10.0.0.1:6443" || where != filepath.Join(home, ".kube", "config") {
		t.Fatalf("~/.kube/config: host %v from %q, err %v", cfg, where, err)
	}

	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	writeKubeconfig(t, a, "https://10.0.0.2:6443", "a")
	writeKubeconfig(t, b, "https://10.0.0.3:6443", "b")
	t.Setenv("KUBECONFIG", a+string(os.PathListSeparator)+b)
	cfg, where, err = RESTConfig("", "")
	if err != nil || cfg.Host != "https://10.0.0.2:6443" || !strings.Contains(where, a) {
		t.Fatalf("KUBECONFIG a:b: host %v from %q, err %v", cfg, where, err)
	}
	// A context of the second file is reachable through the merge.
	if cfg, _, err = RESTConfig("", "b"); err != nil || cfg.Host != "https://10.0.0.3:6443" {
		t.Fatalf("KUBECONFIG a:b, context b: %v, %v", cfg, err)
	}

	cfg, where, err = RESTConfig(b, "")
	if err != nil || cfg.Host != "https://10.0.0.3:6443" || where != b {
		t.Fatalf("--kubeconfig b: host %v from %q, err %v", cfg, where, err)
	}
}

// A --kubeconfig that does not exist names the flag and the file, and
// nothing else: no path gets a hint about a particular environment.
func TestKubeconfigErrorsNameTheRealFix(t *testing.T) {
	for _, kc := range []string{"/nonexistent/prod.kubeconfig", "/nonexistent/rdmasuite-bed/kubeconfig"} {
		_, _, err := RESTConfig(kc, "")
		if err == nil || !strings.HasPrefix(err.Error(), "--kubeconfig "+kc+": ") || !strings.Contains(err.Error(), "no such file or directory") ||
			strings.Contains(err.Error(), "make ") {
			t.Errorf("missing kubeconfig %s: %v", kc, err)
		}
	}
}

func TestUnreachableNamesTheRealFix(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "prod")
	writeKubeconfig(t, kc, "https://127.0.0.1:1", "prod")
	cfg, where, err := RESTConfig(kc, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReachableFrom(cfg, where, 2*time.Second)
	if err == nil || strings.Contains(err.Error(), "bed") || !strings.Contains(err.Error(), "kubectl --kubeconfig "+kc+" cluster-info") {
		t.Errorf("unreachable real cluster: %v", err)
	}
	// Every kubeconfig gets the same fix, whatever its path.
	const other = "/var/lib/rdmasuite-bed/kubeconfig"
	_, err = ReachableFrom(cfg, other, 2*time.Second)
	if err == nil || strings.Contains(err.Error(), "make ") || !strings.Contains(err.Error(), "kubectl --kubeconfig "+other+" cluster-info)") {
		t.Errorf("unreachable cluster of %s: %v", other, err)
	}
}

// A kubeconfig without a current context, or a --context it lacks, is
// named with the contexts it has and the fix, never client-go's "try
// setting KUBERNETES_MASTER".
func TestKubeconfigContextErrorsListTheContexts(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "config")
	writeKubeconfig(t, kc, "https://10.0.0.1:6443", "prod")
	if _, _, err := RESTConfig(kc, "nope"); err == nil || !strings.Contains(err.Error(), `has no context "nope"; it has: prod`) {
		t.Errorf("--context nope: %v", err)
	}
	body, _ := os.ReadFile(kc)
	os.WriteFile(kc, []byte(strings.Replace(string(body), "current-context: prod", "current-context: \"\"", 1)), 0o600)
	_, _, err := RESTConfig(kc, "")
	if err == nil || !strings.Contains(err.Error(), "has no current context: pass --context NAME (prod)") || strings.Contains(err.Error(), "KUBERNETES_MASTER") {
		t.Errorf("no current context: %v", err)
	}
	if cfg, _, err := RESTConfig(kc, "prod"); err != nil || cfg.Host != "https://10.0.0.1:6443" {
		t.Errorf("--context prod: %v %v", cfg, err)
	}
	os.WriteFile(kc, []byte(strings.Replace(string(body), "current-context: prod", "current-context: gone", 1)), 0o600)
	if _, _, err := RESTConfig(kc, ""); err == nil || !strings.Contains(err.Error(), `its current context "gone" does not exist; it has: prod`) {
		t.Errorf("a current context that is gone: %v", err)
	}
}
