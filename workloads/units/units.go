// Package units formats sizes the way RDMA tools and operators write them.
package units

import "fmt"

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
