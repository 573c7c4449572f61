package names

import (
	"regexp"
	"strings"
	"testing"
)

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// The defect: pod names kept the last 20 characters of the node name, so
// nodes differing only at the front collided and one was silently unprobed.
func TestLongNamesDifferingAtTheFrontStayUnique(t *testing.T) {
	a := Object("mr-shared-dev", "gpu001.prod.cluster.local")
	b := Object("mr-shared-dev", "gpu101.prod.cluster.local")
	if a == b {
		t.Fatalf("collision: %s", a)
	}
	long := strings.Repeat("rack-17-row-b-", 8)
	seen := map[string]string{}
	for _, n := range []string{"a" + long, "b" + long, long + "a", long + "b", "x"} {
		for _, prefix := range []string{"bw-shared-dev-0-1-s", "node", "mr-hostdev"} {
			name := Object(prefix, n)
			if len(name) > MaxLen || !dns1123.MatchString(name) {
				t.Errorf("%q is not a valid pod name (len %d)", name, len(name))
			}
			if prev, ok := seen[name]; ok {
				t.Errorf("%s and %s both named %s", prev, prefix+"/"+n, name)
			}
			seen[name] = prefix + "/" + n
		}
	}
}

func TestReadableAndStable(t *testing.T) {
	n := Object("mr-shared-dev", "GPU_Node.7")
	if !strings.HasPrefix(n, "mr-shared-dev-gpu-node-7-") {
		t.Errorf("not readable: %s", n)
	}
	if n != Object("mr-shared-dev", "GPU_Node.7") {
		t.Error("not stable")
	}
	if Object("a", "b-c") == Object("a-b", "c") {
		t.Error("part boundaries must count")
	}
}
