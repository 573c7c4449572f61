package thresholds

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"gopkg.in/yaml.v3"
)

// Marshal writes skus as a thresholds file (schema and skus), header
// (lines without "#") as its opening comment. The file reads back
// (Parse, ParseOverlay) as the same SKUs: every given field is written,
// none that was left out, so an overlay of these SKUs replaces others of
// their names whole, as written.
func Marshal(header string, skus []SKU) ([]byte, error) {
	var b bytes.Buffer
	for _, l := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if header != "" {
			b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
		}
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(struct {
		Schema string `yaml:"schema"`
		SKUs   []SKU  `yaml:"skus"`
	}{Schema, skus}); err != nil {
		return nil, fmt.Errorf("thresholds: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("thresholds: %w", err)
	}
	return b.Bytes(), nil
}

// MarshalYAML writes a whole number as one (minMemlockBytes: 1048576, not
// 1.048576e+06), so that a written file reads as a person would write it.
func (v Value) MarshalYAML() (any, error) {
	type plain struct {
		Value  any    `yaml:"value,omitempty"`
		Source string `yaml:"source,omitempty"`
	}
	p := plain{Source: v.Source}
	if v.Value != nil {
		p.Value = *v.Value
		if x := *v.Value; x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			p.Value = int64(x)
		}
	}
	return p, nil
}
