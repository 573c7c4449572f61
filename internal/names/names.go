// Package names makes the names of the objects a run creates: readable, a
// valid DNS-1123 label, and unique for any inputs. Truncating node names
// alone collides (gpu001.prod.cluster.local and gpu101.prod.cluster.local
// share their last 20 characters), so every name ends in a hash of the
// whole identity it stands for.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxLen is the longest name a pod (a DNS-1123 label) may have.
const MaxLen = 63

const hashLen = 8

// Object returns prefix-<readable parts>-<hash>, at most MaxLen characters.
// The hash covers prefix and every part in full, so two different
// identities never share a name (up to a 32-bit hash collision), however
// the readable text was shortened.
func Object(prefix string, parts ...string) string {
	h := sha256.Sum256([]byte(prefix + "\x00" + strings.Join(parts, "\x00")))
	sum := hex.EncodeToString(h[:])[:hashLen]
	readable := sanitize(strings.Join(append([]string{prefix}, parts...), "-"))
	room := MaxLen - hashLen - 1
	if len(readable) > room {
		// Keep the prefix's kind and the front of the node name: node names
		// usually differ in their first label (gpu001 vs gpu101).
		readable = strings.TrimRight(readable[:room], "-")
	}
	if readable == "" {
		return "x-" + sum
	}
	return readable + "-" + sum
}

// sanitize lowercases and maps everything outside [a-z0-9-] to '-',
// squeezing runs of '-' and trimming them at both ends.
func sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		b.WriteRune(r)
		dash = false
	}
	return strings.Trim(b.String(), "-")
}
