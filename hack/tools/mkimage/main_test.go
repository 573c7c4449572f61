package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type entry struct {
	hdr  *tar.Header
	data string
}

// files reads an image's flattened filesystem.
func files(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = entry{h, string(b)}
	}
}

// runnerLike builds an image shaped like make images' runner (and one like
// the probe) from small stand-in files, into dir.
func buildPair(t *testing.T, dir, tag string) (runner, probe string) {
	t.Helper()
	suite := filepath.Join(dir, "rdmasuite-suite")
	cli := filepath.Join(dir, "rdmasuite")
	probeBin := filepath.Join(dir, "rdmaprobe")
	for f, s := range map[string]string{suite: "suite-binary", cli: "cli-binary", probeBin: "probe-binary"} {
		if err := os.WriteFile(f, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runner, probe = filepath.Join(dir, "rdmasuite-runner.tar"), filepath.Join(dir, "rdmaprobe.tar")
	if err := build(spec{tag: "docker.io/rdmasuite/rdmasuite-runner:" + tag, out: runner,
		entrypoint: "/usr/local/bin/rdmasuite-suite", user: "65532:65532", workdir: "/work",
		env:   []string{"HOME=/work"},
		files: []string{suite + "=/usr/local/bin/rdmasuite-suite", cli + "=/usr/local/bin/rdmasuite"}}); err != nil {
		t.Fatal(err)
	}
	if err := build(spec{tag: "docker.io/rdmasuite/rdmaprobe:" + tag, out: probe,
		entrypoint: "/usr/local/bin/rdmaprobe", files: []string{probeBin + "=/usr/local/bin/rdmaprobe"}}); err != nil {
		t.Fatal(err)
	}
	return runner, probe
}

func checkRunner(t *testing.T, img v1.Image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/usr/local/bin/rdmasuite-suite" {
		t.Errorf("entrypoint %q", c.Entrypoint)
	}
	if c.User != "65532:65532" || c.WorkingDir != "/work" {
		t.Errorf("user %q workdir %q, want 65532:65532 /work", c.User, c.WorkingDir)
	}
	if strings.Join(c.Env, " ") != "PATH=/usr/local/bin:/usr/bin:/bin HOME=/work" {
		t.Errorf("env %q", c.Env)
	}
	if cf.OS != "linux" || cf.Architecture == "" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	fs := files(t, img)
	for p, want := range map[string]string{"usr/local/bin/rdmasuite-suite": "suite-binary", "usr/local/bin/rdmasuite": "cli-binary"} {
		e, ok := fs[p]
		if !ok || e.data != want || e.hdr.Mode&0o111 == 0 {
			t.Errorf("%s: present %v, content %q, mode %o", p, ok, e.data, e.hdr.Mode)
		}
	}
	if w, ok := fs["work"]; !ok || w.hdr.Typeflag != tar.TypeDir || w.hdr.Uid != 65532 || w.hdr.Gid != 65532 || w.hdr.Mode != 0o755 {
		t.Errorf("/work: %+v", w.hdr)
	}
	if tmp, ok := fs["tmp"]; !ok || tmp.hdr.Mode != 0o1777 {
		t.Errorf("/tmp missing or not 1777")
	}
}

func TestBuild(t *testing.T) {
	runner, probe := buildPair(t, t.TempDir(), "v1")
	img, err := tarball.ImageFromPath(runner, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkRunner(t, img)
	img, err = tarball.ImageFromPath(probe, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	if cf.Config.User != "" || cf.Config.WorkingDir != "" || cf.Config.Entrypoint[0] != "/usr/local/bin/rdmaprobe" {
		t.Errorf("probe config %+v", cf.Config)
	}
	if fs := files(t, img); fs["usr/local/bin/rdmaprobe"].data != "probe-binary" || fs["usr"].hdr.Uid != 0 {
		t.Errorf("probe files %v", fs)
	}
}

func TestBuildRejects(t *testing.T) {
	f := filepath.Join(t.TempDir(), "x")
	os.WriteFile(f, nil, 0o644)
	for _, s := range []spec{
		{tag: "r/x:1", user: "nonroot", files: []string{f + "=/x"}},
		{tag: "r/x:1", user: "1:g", files: []string{f + "=/x"}},
		{tag: "r/x:1", workdir: "work", files: []string{f + "=/x"}},
		{tag: "r/x:1", env: []string{"NOEQUALS"}, files: []string{f + "=/x"}},
		{tag: "r/x:1", files: []string{f + "=x"}},
	} {
		s.out = filepath.Join(t.TempDir(), "o.tar")
		if err := build(s); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

// isolate points the default keychain at an empty (or the given) Docker
// config so the tests never see the machine's credentials.
func isolate(t *testing.T, auths map[string]string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DOCKER_CONFIG", filepath.Join(home, ".docker"))
	t.Setenv("REGISTRY_AUTH_FILE", "")
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	if auths == nil {
		return
	}
	cfg := map[string]map[string]map[string]string{"auths": {}}
	for host, up := range auths {
		cfg["auths"][host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(up))}
	}
	b, _ := json.Marshal(cfg)
	os.MkdirAll(filepath.Join(home, ".docker"), 0o700)
	if err := os.WriteFile(filepath.Join(home, ".docker", "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func newRegistry(t *testing.T, user, pass string) string {
	t.Helper()
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if user != "" {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			inner.ServeHTTP(w, r)
		})
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

func TestPushAndPullBack(t *testing.T) {
	isolate(t, nil)
	host := newRegistry(t, "", "")
	runner, probe := buildPair(t, t.TempDir(), "v0.1.0-3-gabc")
	var out, errb bytes.Buffer
	if rc := pushMain([]string{"-registry", host + "/team/", runner, probe}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	for _, want := range []string{host + "/team/rdmasuite-runner:v0.1.0-3-gabc@sha256:", host + "/team/rdmaprobe:v0.1.0-3-gabc@sha256:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	ref, err := name.NewTag(host + "/team/rdmasuite-runner:v0.1.0-3-gabc")
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	checkRunner(t, img)
	local, _ := tarball.ImageFromPath(runner, nil)
	ld, _ := local.Digest()
	rd, _ := img.Digest()
	if ld != rd {
		t.Errorf("pulled digest %s, local %s", rd, ld)
	}
	pref, _ := name.NewTag(host + "/team/rdmaprobe:v0.1.0-3-gabc")
	pimg, err := remote.Image(pref)
	if err != nil {
		t.Fatal(err)
	}
	if cf, _ := pimg.ConfigFile(); cf.Config.Entrypoint[0] != "/usr/local/bin/rdmaprobe" {
		t.Errorf("probe entrypoint %q", cf.Config.Entrypoint)
	}
	if files(t, pimg)["usr/local/bin/rdmaprobe"].data != "probe-binary" {
		t.Error("probe binary not in the pulled image")
	}
}

func TestPushWithCredentials(t *testing.T) {
	host := newRegistry(t, "ci", "s3cret")
	runner, _ := buildPair(t, t.TempDir(), "v1")
	isolate(t, map[string]string{host: "ci:s3cret"})
	if _, err := push(context.Background(), host, false, []string{runner}, authn.DefaultKeychain); err != nil {
		t.Fatalf("push with the right credentials in $DOCKER_CONFIG: %v", err)
	}
	ref, _ := name.NewTag(host + "/rdmasuite-runner:v1")
	img, err := remote.Image(ref, remote.WithAuth(&authn.Basic{Username: "ci", Password: "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	checkRunner(t, img)
}

func TestPushErrors(t *testing.T) {
	dir := t.TempDir()
	runner, _ := buildPair(t, dir, "v1")
	notImage := filepath.Join(dir, "junk.tar")
	os.WriteFile(notImage, []byte("not a tarball"), 0o644)
	authHost := newRegistry(t, "ci", "s3cret")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	for _, c := range []struct {
		name, registry string
		auths          map[string]string
		tarballs       []string
		want           []string
	}{
		{"no registry", "", nil, []string{runner}, []string{"no registry given", "make push-images REGISTRY="}},
		{"scheme", "https://registry.example.com/team", nil, []string{runner}, []string{"has a scheme", "registry.example.com/team"}},
		{"bad name", "Registry.Example.com/Team", nil, []string{runner}, []string{"does not make an image name"}},
		{"not an image", "registry.example.com/team", nil, []string{notImage}, []string{"junk.tar is not a docker-archive", "make images"}},
		{"unreachable", closed + "/team", nil, []string{runner}, []string{"cannot reach registry " + closed, "check the host name and port"}},
		{"no credentials", authHost, nil, []string{runner}, []string{"registry " + authHost + " refused", "HTTP 401", "docker login " + authHost, "DOCKER_CONFIG"}},
		{"wrong credentials", authHost, map[string]string{authHost: "ci:wrong"}, []string{runner}, []string{"refused", "docker login " + authHost}},
	} {
		t.Run(c.name, func(t *testing.T) {
			isolate(t, c.auths)
			_, err := push(context.Background(), c.registry, false, c.tarballs, authn.DefaultKeychain)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}

	// The command line: usage errors exit 2, push errors 1.
	var out, errb bytes.Buffer
	if rc := pushMain([]string{"-registry", "r.example.com"}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), "make images") {
		t.Errorf("no tarballs: rc %d, %s", rc, errb.String())
	}
	errb.Reset()
	if rc := pushMain([]string{runner}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "no registry given") {
		t.Errorf("no registry: rc %d, %s", rc, errb.String())
	}
}
