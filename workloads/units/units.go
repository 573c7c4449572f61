// Package units formats sizes the way RDMA tools and operators write them.
package units

import (
	"fmt"
	"strconv"
	"strings"
)

// Bytes prints n in binary units when it is a whole multiple (4 KiB, 1 MiB,
// 1 GiB), else in bytes: the form used in error messages, diagnoses and
// reports, so "ibv_reg_mr(1 MiB)" and "memlock limit is 64 KiB" agree.
func Bytes(n int64) string {
	switch {
	case n >= 1<<40 && n%(1<<40) == 0:
		return fmt.Sprintf("%d TiB", n>>40)
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// ParseSizes reads a comma-separated list of sizes in bytes or with a K, M
// or G suffix (binary: 64K = 65536), the way perftest's -s and our flags
// take them: "64K,1M,4096".
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, part := range SplitList(s) {
		mult, num := 1, part
		switch {
		case strings.HasSuffix(part, "K"):
			mult, num = 1<<10, strings.TrimSuffix(part, "K")
		case strings.HasSuffix(part, "M"):
			mult, num = 1<<20, strings.TrimSuffix(part, "M")
		case strings.HasSuffix(part, "G"):
			mult, num = 1<<30, strings.TrimSuffix(part, "G")
		}
		n, err := strconv.Atoi(num)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q: want e.g. 65536, 64K, 1M", part)
		}
		out = append(out, n*mult)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no size in %q: want e.g. 64K,1M", s)
	}
	return out, nil
}

// SplitList splits a comma-separated flag value, trimming spaces and
// dropping empty entries.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
