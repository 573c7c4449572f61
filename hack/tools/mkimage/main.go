// Command mkimage builds a single-layer container image from files on this
// machine and writes it as a docker-archive tarball that `ctr images import`
// (and `docker load`) accepts, and pushes such tarballs to a registry. No
// Docker engine is needed for either: `make images` and `make push-images`
// use it, and so does the bed (hack/bed.sh), which has no engine and no
// registry.
//
//	mkimage -tag rdmasuite/rdmaprobe:dev -o rdmaprobe.tar \
//	  -entrypoint /usr/local/bin/rdmaprobe ./bin/rdmaprobe=/usr/local/bin/rdmaprobe
//	mkimage -tag rdmasuite/rdmasuite-runner:dev -o runner.tar -user 65532:65532 -workdir /work \
//	  -entrypoint /usr/local/bin/rdmasuite-suite ./bin/rdmasuite-suite=/usr/local/bin/rdmasuite-suite
//	mkimage push -registry registry.example.com/team bin/images/rdmaprobe.tar ...
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type mapping struct{ src, dst string }

// spec is one image to build.
type spec struct {
	tag, out   string
	entrypoint string
	// user is the numeric UID[:GID] the image runs as ("" = root).
	user string
	// workdir is the working directory; it is created owned by user.
	workdir string
	// env is added to PATH=/usr/local/bin:/usr/bin:/bin (KEY=VALUE).
	env   []string
	files []string // SRC=DST
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if len(os.Args) > 1 && os.Args[1] == "push" {
		os.Exit(pushMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	var s spec
	var env listFlag
	flag.StringVar(&s.tag, "tag", "", "image reference, e.g. rdmasuite/rdmaprobe:dev (required)")
	flag.StringVar(&s.out, "o", "", "output docker-archive tarball (required)")
	flag.StringVar(&s.entrypoint, "entrypoint", "", "entrypoint path inside the image")
	flag.StringVar(&s.user, "user", "", "numeric UID[:GID] the image runs as (default root)")
	flag.StringVar(&s.workdir, "workdir", "", "working directory, created owned by -user")
	flag.Var(&env, "env", "KEY=VALUE added to the image's environment (repeatable)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: mkimage -tag REF -o OUT.tar [-entrypoint PATH] [-user UID[:GID]] [-workdir DIR] [-env K=V]... SRC=DST ...")
		fmt.Fprintln(os.Stderr, "       mkimage push -registry REGISTRY [-insecure] IMAGE.tar ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	s.env, s.files = env, flag.Args()
	if s.tag == "" || s.out == "" || len(s.files) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := build(s); err != nil {
		fmt.Fprintf(os.Stderr, "mkimage: %v\n", err)
		os.Exit(1)
	}
}

func pushMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mkimage push", flag.ContinueOnError)
	fs.SetOutput(stderr)
	registry := fs.String("registry", "", "where to push: a registry host and optional path, e.g. registry.example.com/team; each image goes to REGISTRY/<its name>:<its tag>")
	insecure := fs.Bool("insecure", false, "talk plain HTTP to the registry (loopback and private addresses already do)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mkimage push -registry REGISTRY [-insecure] IMAGE.tar ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "mkimage push: no image tarballs given (make images builds them under bin/images)")
		return 2
	}
	res, err := push(context.Background(), *registry, *insecure, fs.Args(), authn.DefaultKeychain)
	for _, r := range res {
		fmt.Fprintf(stdout, "pushed %s (%s) to %s@%s\n", r.tarball, r.source, r.ref, r.digest)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mkimage push: %v\n", err)
		return 1
	}
	return 0
}

func build(s spec) error {
	ref, err := name.NewTag(s.tag)
	if err != nil {
		return fmt.Errorf("bad -tag %q: %w", s.tag, err)
	}
	uid, gid, err := parseUser(s.user)
	if err != nil {
		return err
	}
	if s.workdir != "" && !path.IsAbs(s.workdir) {
		return fmt.Errorf("bad -workdir %q: want an absolute path", s.workdir)
	}
	var maps []mapping
	for _, f := range s.files {
		src, dst, ok := strings.Cut(f, "=")
		if !ok || !path.IsAbs(dst) {
			return fmt.Errorf("bad file mapping %q: want SRC=/absolute/path/in/image", f)
		}
		maps = append(maps, mapping{src, dst})
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	for _, e := range s.env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return fmt.Errorf("bad -env %q: want KEY=VALUE", e)
		}
		if k == "PATH" {
			env[0] = e
			continue
		}
		env = append(env, e)
	}
	layerTar, err := layerFromFiles(maps, s.workdir, uid, gid)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	// containerd refuses images whose config lacks the platform.
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.Env = env
	if s.entrypoint != "" {
		cfg.Config.Entrypoint = []string{s.entrypoint}
	}
	if s.user != "" {
		cfg.Config.User = s.user
	}
	cfg.Config.WorkingDir = s.workdir
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return tarball.WriteToFile(s.out, ref, img)
}

// parseUser reads "UID" or "UID:GID" (numeric: the image has no user
// database for names, and the workdir's owner must be known).
func parseUser(u string) (uid, gid int, err error) {
	if u == "" {
		return 0, 0, nil
	}
	us, gs, hasGID := strings.Cut(u, ":")
	bad := fmt.Errorf("bad -user %q: want a numeric UID or UID:GID, e.g. 65532:65532", u)
	if uid, err = strconv.Atoi(us); err != nil || uid < 0 {
		return 0, 0, bad
	}
	gid = uid
	if hasGID {
		if gid, err = strconv.Atoi(gs); err != nil || gid < 0 {
			return 0, 0, bad
		}
	}
	return uid, gid, nil
}

type dirEntry struct {
	mode     int64
	uid, gid int
}

// layerFromFiles writes one tar layer holding every mapped file (following
// symlinks on the source side) and the parent directories they need, plus
// /tmp, which many programs expect, and workdir (owned by uid:gid) if set.
func layerFromFiles(maps []mapping, workdir string, uid, gid int) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]dirEntry{"tmp": {mode: 0o1777}}
	addParents := func(p string) {
		for d := path.Clean(strings.TrimPrefix(p, "/")); d != "." && d != "" && d != "/"; d = path.Dir(d) {
			if _, ok := dirs[d]; !ok {
				dirs[d] = dirEntry{mode: 0o755}
			}
		}
	}
	for _, m := range maps {
		addParents(path.Dir(m.dst))
	}
	if workdir != "" {
		addParents(workdir)
		dirs[path.Clean(strings.TrimPrefix(workdir, "/"))] = dirEntry{mode: 0o755, uid: uid, gid: gid}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	epoch := time.Unix(0, 0)
	for _, d := range sorted {
		e := dirs[d]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: e.mode,
			Uid: e.uid, Gid: e.gid, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	for _, m := range maps {
		data, err := os.ReadFile(m.src)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", m.src, err)
		}
		st, err := os.Stat(m.src)
		if err != nil {
			return nil, err
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(m.dst, "/"),
			Mode: int64(st.Mode().Perm()), Size: int64(len(data)), ModTime: epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
