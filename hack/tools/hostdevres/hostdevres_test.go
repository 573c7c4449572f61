package hostdevres

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

const good = `{"pci":"0000:00:05.0","uverbs":"uverbs2","placeholder":"hdhold0","placeholderNetdev":"hdh0","rdmaDevice":"rxehd0"}`

func TestReadAndCheck(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	write(t, Path(dir, "0000:00:05.0"), good)
	r, err := Read(dir, "0000:00:05.0")
	if err != nil {
		t.Fatal(err)
	}
	all, err := All(dir)
	if err != nil || len(all) != 1 || all[0] != r {
		t.Fatalf("All = %v, %v", all, err)
	}
	ibdev := filepath.Join(root, "sys/class/infiniband_verbs/uverbs2/ibdev")
	if err := Check(root, r); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("no uverbs2: %v", err)
	}
	for holder, ok := range map[string]bool{"hdhold0": true, "rxehd0": true, "rxe0": false} {
		write(t, ibdev, holder+"\n")
		if err := Check(root, r); (err == nil) != ok {
			t.Errorf("holder %s: %v", holder, err)
		}
	}
	if _, err := Read(dir, "0000:00:06.0"); err == nil || !strings.Contains(err.Error(), "not one of the node's hostdev NICs") {
		t.Fatalf("unknown NIC: %v", err)
	}
}

func TestReadRejectsBadReservations(t *testing.T) {
	for name, body := range map[string]string{
		"not json":     `{`,
		"bad pci":      strings.Replace(good, "0000:00:05.0", "5", 1),
		"no uverbs":    strings.Replace(good, `"uverbs2"`, `""`, 1),
		"slash":        strings.Replace(good, `"rxehd0"`, `"a/b"`, 1),
		"wrong uverbs": strings.Replace(good, `"uverbs2"`, `"umad0"`, 1),
	} {
		dir := t.TempDir()
		write(t, Path(dir, "0000:00:05.0"), body)
		if _, err := Read(dir, "0000:00:05.0"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	dir := t.TempDir()
	write(t, Path(dir, "0000:00:07.0"), good)
	if _, err := Read(dir, "0000:00:07.0"); err == nil || !strings.Contains(err.Error(), "holds PCI device") {
		t.Errorf("file name and content disagree: %v", err)
	}
}
