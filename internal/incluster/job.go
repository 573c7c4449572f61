package incluster

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Labels and annotations of a Job that `rdmasuite run` created.
const (
	RunLabel = "rdmasuite.io/cli-run"
	// CreatedAnnotation lists what the run applied that did not exist
	// before (kind/name, comma-separated), so that whoever ends the run
	// (rdmasuite run, or rdmasuite results --delete after --wait=false)
	// deletes exactly that.
	CreatedAnnotation = "rdmasuite.io/created"
)

// JobSpec is what a run changes in the acceptance Job of suites/deploy.
type JobSpec struct {
	ID    string // the run's id: the Job is rdmasuite-run-<id>
	Image string // the runner image
	// SuiteArgs are the suite's flags, passed through unchanged; they
	// replace the manifest's own value of a flag they repeat (--labels).
	SuiteArgs    []string
	NodeSelector map[string]string
	Env          []corev1.EnvVar
	// Timeout is the suite's go test -timeout; the Job's deadline leaves
	// the suite's teardown 15 minutes beyond it.
	Timeout time.Duration
}

// reservedFlags are the suite flags a run sets itself: where the results
// go and come back from, and which namespace the run lives in. Given in
// the suite flags they would send the results where the run cannot fetch
// them, so they are refused with the run flag to use instead.
var reservedFlags = map[string]string{
	"namespace":         "use rdmasuite run --namespace",
	"results-configmap": "the run reads rdmasuite-latest",
	"report-dir":        "use rdmasuite run --report-dir (where the results come back to)",
	"kubeconfig":        "the Job runs as its ServiceAccount; use rdmasuite run --kubeconfig for your own access",
	"test.timeout":      "use rdmasuite run --timeout",
	"test.v":            "the run streams -test.v output always",
}

// flagName is the name of a command-line token that is a flag ("" else).
func flagName(arg string) string {
	if !strings.HasPrefix(arg, "-") || arg == "-" || arg == "--" {
		return ""
	}
	n := strings.TrimLeft(arg, "-")
	if i := strings.IndexByte(n, '='); i >= 0 {
		n = n[:i]
	}
	return n
}

// CheckSuiteArgs refuses suite flags the run sets itself.
func CheckSuiteArgs(args []string) error {
	for _, a := range args {
		if why, ok := reservedFlags[flagName(a)]; ok {
			return fmt.Errorf("suite flag %s is set by rdmasuite run: %s", a, why)
		}
	}
	return nil
}

// mergeArgs is the manifest's args with every flag the user gave removed
// (with its value when given as a separate token), then the user's args.
// e2e-framework's --labels adds up when repeated, so a user's --labels
// must replace the acceptance Job's, not join it.
func mergeArgs(base, user []string) []string {
	given := map[string]bool{}
	for _, a := range user {
		if n := flagName(a); n != "" {
			given[n] = true
		}
	}
	var out []string
	for i := 0; i < len(base); i++ {
		n := flagName(base[i])
		if n == "" || !given[n] {
			out = append(out, base[i])
			continue
		}
		if !strings.Contains(base[i], "=") && i+1 < len(base) && flagName(base[i+1]) == "" {
			i++ // its value
		}
	}
	return append(out, user...)
}

// BuildJob is the acceptance Job of the manifests made this run's: named
// for the run, the runner image given, the suite's flags passed through,
// the --namespace the run lives in, the results in an emptyDir (they come
// back through the ConfigMap), a deadline from the timeout.
func BuildJob(o Objects, s JobSpec) (*batchv1.Job, error) {
	j := o.Job.DeepCopy()
	j.Name = "rdmasuite-run-" + s.ID
	j.Labels[RunLabel] = s.ID
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	j.Spec.Template.Labels[RunLabel] = s.ID
	deadline := int64((s.Timeout + 15*time.Minute) / time.Second)
	j.Spec.ActiveDeadlineSeconds = &deadline
	spec := &j.Spec.Template.Spec
	var c *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name == runnerContainer {
			c = &spec.Containers[i]
		}
	}
	if c == nil {
		return nil, fmt.Errorf("the acceptance Job has no %q container", runnerContainer)
	}
	c.Image = s.Image
	args := []string{fmt.Sprintf("-test.timeout=%s", s.Timeout)}
	for _, a := range c.Args {
		switch flagName(a) {
		case "test.timeout":
		case "namespace":
			args = append(args, "--namespace="+o.Namespace.Name)
		default:
			args = append(args, a)
		}
	}
	c.Args = mergeArgs(args, s.SuiteArgs)
	c.Env = append(c.Env, s.Env...)
	if len(s.NodeSelector) > 0 {
		spec.NodeSelector = s.NodeSelector
	}
	found := false
	for i, v := range spec.Volumes {
		if v.Name == resultsVolume {
			spec.Volumes[i].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("the acceptance Job has no %q volume", resultsVolume)
	}
	return j, nil
}
