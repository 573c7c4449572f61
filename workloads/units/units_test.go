package units

import "testing"

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{4096: "4 KiB", 1 << 20: "1 MiB", 1 << 30: "1 GiB", 65536: "64 KiB", 1000: "1000 B", 1536: "1536 B", 8 << 20: "8 MiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
