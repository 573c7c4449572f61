// Package incluster runs the acceptance suite as a Job in the cluster, the
// way `rdmasuite run` does: it applies the manifests of suites/deploy (the
// namespace, the runner's ServiceAccount and RBAC, the thresholds overlay,
// the acceptance Job with the suite's flags), streams the run's log, waits,
// brings the results back from the run's ConfigMap, and deletes what it
// created, also when interrupted. The suite inside the Job is the compiled
// suites package (internal/lifecycle): the same run as go test's.
package incluster

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// The names suites/deploy/base gives its objects.
const (
	DefaultNamespace  = "rdmasuite"
	RunnerName        = "rdmasuite-runner"
	ThresholdsCM      = "rdmasuite-thresholds"
	ThresholdsKey     = "skus.yaml"
	LatestCM          = "rdmasuite-latest"
	PartOfLabel       = "app.kubernetes.io/part-of"
	PartOf            = "rdmasuite"
	runnerContainer   = "runner"
	resultsVolume     = "results"
	thresholdsOverlay = "/etc/rdmasuite/thresholds/skus.yaml"
)

// Objects are the manifests of suites/deploy, decoded: what `kubectl apply
// -k suites/deploy/overlays/acceptance` creates, less the results claim.
type Objects struct {
	Namespace          *corev1.Namespace
	ServiceAccount     *corev1.ServiceAccount
	Role               *rbacv1.Role
	RoleBinding        *rbacv1.RoleBinding
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	Thresholds         *corev1.ConfigMap
	Job                *batchv1.Job
}

// Load decodes the manifests from fsys (suites/deploy.Files) as kustomize
// would lay them out: every namespaced object in the base's namespace, the
// base's part-of label on all, the thresholds ConfigMap generated from
// base/skus.yaml.
func Load(fsys fs.FS) (Objects, error) {
	var o Objects
	decode := scheme.Codecs.UniversalDeserializer()
	for _, file := range []string{"base/namespace.yaml", "base/rbac.yaml", "overlays/acceptance/job.yaml"} {
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			return o, err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return o, fmt.Errorf("%s: %w", file, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			obj, _, err := decode.Decode(doc, nil, nil)
			if err != nil {
				return o, fmt.Errorf("%s: %w", file, err)
			}
			if err := o.put(obj); err != nil {
				return o, fmt.Errorf("%s: %w", file, err)
			}
		}
	}
	skus, err := fs.ReadFile(fsys, path.Join("base", ThresholdsKey))
	if err != nil {
		return o, err
	}
	o.Thresholds = &corev1.ConfigMap{Data: map[string]string{ThresholdsKey: string(skus)}}
	o.Thresholds.Name = ThresholdsCM
	if o.Namespace == nil || o.ServiceAccount == nil || o.Role == nil || o.RoleBinding == nil ||
		o.ClusterRole == nil || o.ClusterRoleBinding == nil || o.Job == nil {
		return o, fmt.Errorf("suites/deploy lacks one of the namespace, the runner's ServiceAccount, Role, RoleBinding, ClusterRole, ClusterRoleBinding or the acceptance Job")
	}
	o.inNamespace(o.Namespace.Name)
	return o, nil
}

func (o *Objects) put(obj runtime.Object) error {
	switch v := obj.(type) {
	case *corev1.Namespace:
		o.Namespace = v
	case *corev1.ServiceAccount:
		o.ServiceAccount = v
	case *rbacv1.Role:
		o.Role = v
	case *rbacv1.RoleBinding:
		o.RoleBinding = v
	case *rbacv1.ClusterRole:
		o.ClusterRole = v
	case *rbacv1.ClusterRoleBinding:
		o.ClusterRoleBinding = v
	case *batchv1.Job:
		o.Job = v
	default:
		return fmt.Errorf("unexpected %T in the manifests", obj)
	}
	return nil
}

// InNamespace is a copy of the objects for a run in namespace ns (a
// DNS label), with everything that names the namespace changed.
func (o Objects) InNamespace(ns string) (Objects, error) {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return o, fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	c := Objects{Namespace: o.Namespace.DeepCopy(), ServiceAccount: o.ServiceAccount.DeepCopy(), Role: o.Role.DeepCopy(),
		RoleBinding: o.RoleBinding.DeepCopy(), ClusterRole: o.ClusterRole.DeepCopy(), ClusterRoleBinding: o.ClusterRoleBinding.DeepCopy(),
		Thresholds: o.Thresholds.DeepCopy(), Job: o.Job.DeepCopy()}
	c.inNamespace(ns)
	return c, nil
}

// inNamespace puts the run in namespace ns, as kustomize's `namespace:`
// does, and also where kustomize would not look: the bindings' subjects
// and the Role's one resourceName (the namespace the runner may get).
func (o *Objects) inNamespace(ns string) {
	old := o.Namespace.Name
	o.Namespace.Name = ns
	for _, m := range []interface{ SetNamespace(string) }{o.ServiceAccount, o.Role, o.RoleBinding, o.Thresholds, o.Job} {
		m.SetNamespace(ns)
	}
	for i := range o.RoleBinding.Subjects {
		o.RoleBinding.Subjects[i].Namespace = ns
	}
	for i := range o.ClusterRoleBinding.Subjects {
		o.ClusterRoleBinding.Subjects[i].Namespace = ns
	}
	for i, r := range o.Role.Rules {
		for j, n := range r.ResourceNames {
			if n == old && len(r.Resources) == 1 && r.Resources[0] == "namespaces" {
				o.Role.Rules[i].ResourceNames[j] = ns
			}
		}
	}
	for _, m := range []interface {
		GetLabels() map[string]string
		SetLabels(map[string]string)
	}{o.Namespace, o.ServiceAccount, o.Role, o.RoleBinding, o.ClusterRole, o.ClusterRoleBinding, o.Thresholds, o.Job} {
		l := m.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[PartOfLabel] = PartOf
		m.SetLabels(l)
	}
}

// stripComments drops whole-line YAML comments, to tell an empty document
// (a file's header comment) from one with content.
func stripComments(doc []byte) []byte {
	var out []byte
	for _, l := range strings.Split(string(doc), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") && t != "---" {
			out = append(out, l...)
			out = append(out, '\n')
		}
	}
	return out
}
