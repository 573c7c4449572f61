package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// pushed is one image written to the registry.
type pushed struct {
	tarball string
	source  string // the tag the tarball carries
	ref     name.Tag
	digest  v1.Hash
}

// push writes every docker-archive tarball (one image each, as mkimage
// writes them) to REGISTRY/<last element of its repository>:<its tag>:
// rdmaprobe.tar tagged docker.io/rdmasuite/rdmaprobe:v1 goes to
// REGISTRY/rdmaprobe:v1. Every tarball and name is checked before the first
// push. Credentials come from keychain (authn.DefaultKeychain: the Docker
// config and its credential helpers). Errors name the problem and the fix.
func push(ctx context.Context, registry string, insecure bool, tarballs []string, keychain authn.Keychain, opts ...remote.Option) ([]pushed, error) {
	registry = strings.TrimSuffix(strings.TrimSpace(registry), "/")
	if registry == "" {
		return nil, errors.New("no registry given: name where the images go, e.g. make push-images REGISTRY=registry.example.com/team (mkimage push -registry registry.example.com/team)")
	}
	if strings.Contains(registry, "://") {
		return nil, fmt.Errorf("registry %q has a scheme: give a host and optional path, e.g. registry.example.com/team (plain-HTTP registries: add -insecure, make push-images PUSH_FLAGS=-insecure)", registry)
	}
	var nameOpts []name.Option
	if insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	type job struct {
		file, source string
		dst          name.Tag
		img          v1.Image
	}
	var jobs []job
	for _, f := range tarballs {
		opener := func() (io.ReadCloser, error) { return os.Open(f) }
		m, err := tarball.LoadManifest(opener)
		if err != nil {
			return nil, fmt.Errorf("%s is not a docker-archive image tarball (%v): build it with make images", f, err)
		}
		if len(m) != 1 || len(m[0].RepoTags) == 0 {
			return nil, fmt.Errorf("%s: want exactly one tagged image, found %d images: build it with make images", f, len(m))
		}
		src, err := name.NewTag(m[0].RepoTags[0])
		if err != nil {
			return nil, fmt.Errorf("%s: its tag %q: %w", f, m[0].RepoTags[0], err)
		}
		want := registry + "/" + path.Base(src.RepositoryStr()) + ":" + src.TagStr()
		dst, err := name.NewTag(want, nameOpts...)
		if err != nil {
			return nil, fmt.Errorf("registry %q does not make an image name (%s: %v): give a host and optional path, e.g. registry.example.com/team", registry, want, err)
		}
		img, err := tarball.Image(opener, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		jobs = append(jobs, job{f, src.String(), dst, img})
	}
	var done []pushed
	for _, j := range jobs {
		o := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain)}, opts...)
		if err := remote.Write(j.dst, j.img, o...); err != nil {
			return done, explain(err, j.dst, insecure)
		}
		d, err := j.img.Digest()
		if err != nil {
			return done, err
		}
		done = append(done, pushed{j.file, j.source, j.dst, d})
	}
	return done, nil
}

// explain turns a push error into one that says what went wrong and what to
// do about it: credentials refused, registry unreachable, TLS trouble.
func explain(err error, dst name.Tag, insecure bool) error {
	reg := dst.RegistryStr()
	var te *transport.Error
	if errors.As(err, &te) {
		denied := te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden
		for _, d := range te.Errors {
			if d.Code == transport.UnauthorizedErrorCode || d.Code == transport.DeniedErrorCode {
				denied = true
			}
		}
		if denied {
			return fmt.Errorf("registry %s refused to let us push %s (HTTP %d: %v): log in with docker login %s (or podman login, crane auth login %s -u USER -p TOKEN); credentials are read from $DOCKER_CONFIG/config.json (default ~/.docker/config.json) and its credential helpers; also check that this account may push to %s",
				reg, dst, te.StatusCode, err, reg, reg, dst.Context().Name())
		}
		return fmt.Errorf("registry %s answered HTTP %d to the push of %s: %w", reg, te.StatusCode, dst, err)
	}
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	var ce *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	if errors.As(err, &ue) || errors.As(err, &he) || errors.As(err, &ce) {
		return fmt.Errorf("TLS to registry %s failed (%v): trust its CA (install it in the system store, or SSL_CERT_FILE=ca.pem), or for a plain-HTTP registry push with -insecure (make push-images PUSH_FLAGS=-insecure)", reg, err)
	}
	if errors.As(err, &rh) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return fmt.Errorf("registry %s speaks plain HTTP, not HTTPS (%v): push with -insecure (make push-images PUSH_FLAGS=-insecure)", reg, err)
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	var ue2 *url.Error
	if errors.As(err, &de) || errors.As(err, &oe) || errors.As(err, &ne) || errors.As(err, &ue2) {
		hint := ""
		if !insecure && dst.Scheme() == "https" {
			hint = "; a plain-HTTP registry needs -insecure (make push-images PUSH_FLAGS=-insecure)"
		}
		return fmt.Errorf("cannot reach registry %s (%s): %v: check the host name and port in REGISTRY, that the registry is up, and HTTPS_PROXY/NO_PROXY%s",
			reg, dst.Scheme(), err, hint)
	}
	return fmt.Errorf("push %s: %w", dst, err)
}
