package portcounters

import (
	"fmt"
	"strings"
)

// renderMarkdown renders the counter table as COUNTERS.md. The test keeps
// the file in step with table.go, so the document cannot drift from what
// the code judges.
func renderMarkdown(entries []Entry) string {
	var b strings.Builder
	b.WriteString(`# Port counters read and judged by rdmasuite

Generated from ` + "`workloads/portcounters/table.go`" + ` by
` + "`go test ./workloads/portcounters -run TestCountersDocInSync -update`" + `; do not edit.

The probe reads ` + "`/sys/class/infiniband/<dev>/ports/<n>/counters/*`" + ` and
` + "`hw_counters/*`" + ` immediately before and after each measurement, on both sides.
A counter that cannot be read, went backwards (reset or wrap), exists on one
side only, or is stuck at its maximum is named; its delta is never taken as 0.
A drop of any counter (a reset: ` + "`perfquery -R`" + `, a driver reload) leaves the
whole side unknown for that measurement: a reset clears the error counters too.

- **Width**: the counter's width in the IBTA PortCounters attribute as
  ` + "`drivers/infiniband/core/sysfs.c`" + ` reads it (` + "`PORT_PMA_ATTR`" + `), and in
  PortCountersExtended where it differs (` + "`PORT_PMA_ATTR_EXT`" + `). These counters
  stop at all ones instead of wrapping ("instead of overflowing, they shall
  stop at all ones": IBA release 1.8 §16.1.3.5, as quoted in a linux-rdma patch
  giving rxe a PMA; the kernel's mlx4 PMA emulation saturates the same way,
  ` + "`ASSIGN_32BIT_COUNTER`" + ` in ` + "`include/linux/mlx4/device.h`" + `), so a value at its
  maximum makes the delta unknown. hw_counters have no IBTA width; a drop
  there reads as a reset or wrap.
- **Default**: ` + "`fail above N`" + ` is judged with allowance N unless a SKU sets
  another; ` + "`recorded`" + ` is shown when it moves and judged only under a SKU
  bound; ` + "`informational`" + ` counts activity (the data and packet counters
  confirm the measured bytes: ` + "`port_*_data`" + ` count octets/4).
- **Source**: file in the Linux tree that defines the name (and width).
  Meanings of counters/ follow ` + "`Documentation/ABI/stable/sysfs-class-infiniband`" + `;
  of mlx5 hw_counters, NVIDIA's "Understanding mlx5 Linux Counters and Status
  Parameters"; of rxe hw_counters, the code that raises each.

| Counter | Group | Driver | Class | Width | Default | What raises it, what it means | Source |
|---|---|---|---|---|---|---|---|
`)
	for _, e := range entries {
		driver := e.Driver
		if driver == "" {
			driver = "any (PMA)"
		}
		width := "—"
		if e.Bits > 0 {
			width = fmt.Sprint(e.Bits)
			if e.ExtBits > 0 {
				width += fmt.Sprintf(" (%d ext)", e.ExtBits)
			}
		}
		def := string(e.Policy)
		if e.Policy == Judged {
			def = fmt.Sprintf("fail above %d", e.DefaultAllowance)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n",
			e.Name, e.Group, driver, e.Class, width, def, cell(e.Meaning), cell(e.Source))
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
