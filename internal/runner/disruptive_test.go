package runner

import (
	"strings"
	"testing"
	"time"
)

func disruptiveConfig(t *testing.T) Config {
	c := testConfig(t)
	c.AllowDisruptive, c.DisruptNodes, c.StallPeer = true, []string{"gpu-1", "gpu-2"}, "gpu-9"
	c.StallPVC, c.StallPVCNamespace = "rdmasuite-nfs", "default"
	c.MOFEDNamespace, c.MOFEDSelector, c.MOFEDContainer = "nvidia-network-operator", "nvidia.com/ofed-driver", "mofed-container"
	c.DriverReadyFile, c.DriverTimeout, c.StallSteady, c.StallAfter = "/run/mellanox/drivers/.driver-ready", 10*time.Minute, 20*time.Second, 20*time.Second
	c.StallDurability = "fsync"
	return c
}

// Without --allow-disruptive the feature's flags are never used and never
// refused; with it every one is checked and a bad one is named.
func TestDisruptiveFlagsValidated(t *testing.T) {
	off := testConfig(t)
	off.DisruptNodes, off.StallDurability, off.DriverReadyFile = []string{"a", "a"}, "bogus", "relative"
	if err := off.Validate(); err != nil {
		t.Fatalf("without --allow-disruptive: %v", err)
	}
	if err := disruptiveConfig(t).Validate(); err != nil {
		t.Fatal(err)
	}
	for flagName, edit := range map[string]func(*Config){
		"--disrupt-nodes=NODE": func(c *Config) { c.DisruptNodes = nil },
		"gpu-1 given twice":    func(c *Config) { c.DisruptNodes = []string{"gpu-1", "gpu-1"} },
		"--driver-timeout":     func(c *Config) { c.DriverTimeout = 0 },
		"--stall-after":        func(c *Config) { c.StallAfter = -time.Second },
		"--stall-durability":   func(c *Config) { c.StallDurability = "sync" },
		"--driver-ready-file":  func(c *Config) { c.DriverReadyFile = ".driver-ready" },
		"--mofed-selector \"=": func(c *Config) { c.MOFEDSelector = "=x" },
		"--mofed-selector is":  func(c *Config) { c.MOFEDSelector = "" },
		"--mofed-container":    func(c *Config) { c.MOFEDContainer = "" },
		"--stall-pvc is":       func(c *Config) { c.StallPVC = "" },
	} {
		c := disruptiveConfig(t)
		edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), flagName) {
			t.Errorf("%s: %v", flagName, err)
		}
	}
}

func TestDisruptOptionsCarryTheFlags(t *testing.T) {
	r := New(nil, disruptiveConfig(t), "run7")
	o := r.DisruptOptions([]string{"gpu-1", "gpu-3"})
	if o.Namespace != "rdmasuite-run7" || o.RunID != "run7" || strings.Join(o.Targets, ",") != "gpu-1,gpu-2" || o.Peer != "gpu-9" ||
		strings.Join(o.Selected, ",") != "gpu-1,gpu-3" || o.PVCNamespace != "default" || o.PVCName != "rdmasuite-nfs" ||
		o.MOFEDNamespace != "nvidia-network-operator" || o.MOFEDSelector != "nvidia.com/ofed-driver" || o.MOFEDContainer != "mofed-container" ||
		o.DriverReadyFile != "/run/mellanox/drivers/.driver-ready" || o.DriverTimeout != 10*time.Minute || o.Steady != 20*time.Second ||
		o.After != 20*time.Second || o.Durability != "fsync" || o.Thresholds == nil || o.Image != "img" {
		t.Fatalf("%+v", o)
	}
}

// The feature's lines go through the run's Progress (stamped, in the
// progress log), not straight to stdout.
func TestDisruptiveLinesGoToProgress(t *testing.T) {
	r := New(nil, disruptiveConfig(t), "run7")
	var got []string
	r.Progress = func(l string) { got = append(got, l) }
	r.disruptEnv(nil).Printf("%s: writers stopped in %.1f s", "gpu-1", 2.5)
	if len(got) != 1 || got[0] != "disruptive: gpu-1: writers stopped in 2.5 s" {
		t.Fatalf("progress lines %q", got)
	}
}
