// Command mkimage builds a single-layer container image from files on this
// machine and writes it as a docker-archive tarball that `ctr images import`
// accepts. The bed has no Docker engine and no registry, so this is how the
// repo's own binaries become images.
//
//	mkimage -tag rdmasuite/rdmaprobe:dev -o rdmaprobe.tar \
//	  -entrypoint /usr/local/bin/rdmaprobe ./bin/rdmaprobe=/usr/local/bin/rdmaprobe
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type mapping struct{ src, dst string }

func main() {
	tag := flag.String("tag", "", "image reference, e.g. rdmasuite/rdmaprobe:dev (required)")
	out := flag.String("o", "", "output docker-archive tarball (required)")
	entrypoint := flag.String("entrypoint", "", "entrypoint path inside the image")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: mkimage -tag REF -o OUT.tar [-entrypoint PATH] SRC=DST ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *tag == "" || *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := build(*tag, *out, *entrypoint, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "mkimage: %v\n", err)
		os.Exit(1)
	}
}

func build(tag, out, entrypoint string, specs []string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("bad -tag %q: %w", tag, err)
	}
	var maps []mapping
	for _, s := range specs {
		src, dst, ok := strings.Cut(s, "=")
		if !ok || !path.IsAbs(dst) {
			return fmt.Errorf("bad file mapping %q: want SRC=/absolute/path/in/image", s)
		}
		maps = append(maps, mapping{src, dst})
	}
	layerTar, err := layerFromFiles(maps)
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
	cfg.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	if entrypoint != "" {
		cfg.Config.Entrypoint = []string{entrypoint}
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}

// layerFromFiles writes one tar layer holding every mapped file (following
// symlinks on the source side) and the parent directories they need, plus
// /tmp, which many programs expect.
func layerFromFiles(maps []mapping) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{"tmp": true}
	for _, m := range maps {
		for d := path.Dir(strings.TrimPrefix(m.dst, "/")); d != "." && d != ""; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	epoch := time.Unix(0, 0)
	for _, d := range sorted {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode, ModTime: epoch}); err != nil {
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
