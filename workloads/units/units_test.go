package units

import "testing"

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{4096: "4 KiB", 1 << 20: "1 MiB", 1 << 30: "1 GiB", 65536: "64 KiB", 1000: "1000 B", 1536: "1536 B", 8 << 20: "8 MiB",
		3 << 30: "3 GiB", 1<<20 + 1: "1048577 B"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseSizesAndSplitList(t *testing.T) {
	got, err := ParseSizes(" 64K,1M , 4096,2G")
	if err != nil || len(got) != 4 || got[0] != 65536 || got[1] != 1<<20 || got[2] != 4096 || got[3] != 2<<30 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", ",", "64Q", "0", "-1K", "1.5M"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if l := SplitList(" a, ,b,"); len(l) != 2 || l[0] != "a" || l[1] != "b" {
		t.Fatalf("%q", l)
	}
}
