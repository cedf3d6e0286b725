package jobs

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are the suffixes ParseMiB knows, in bytes: binary (KiB, Ki,
// K) and decimal (KB) multiples.
var sizeUnits = []struct {
	suffix string
	bytes  float64
}{
	{"tib", 1 << 40}, {"gib", 1 << 30}, {"mib", 1 << 20}, {"kib", 1 << 10},
	{"ti", 1 << 40}, {"gi", 1 << 30}, {"mi", 1 << 20}, {"ki", 1 << 10},
	{"tb", 1e12}, {"gb", 1e9}, {"mb", 1e6}, {"kb", 1e3},
	{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10},
	{"b", 1},
}

// ParseMiB reads a memory size such as "8GiB", "8G" (binary), "8GB"
// (decimal) or "512MiB", and returns it in MiB, rounded up. A number
// without a unit is refused (issue 53: "8" was read as 8 MiB, silently),
// but 0, the default.
func ParseMiB(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 0.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.bytes
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err == nil && mult == 0 && v != 0 {
		return 0, fmt.Errorf("memory size %q has no unit: write %sGiB or %sMiB, say", s, t, t)
	}
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("memory size %q: want a number with an optional unit (8GiB, 512MiB, 8G)", s)
	}
	mib := math.Ceil(v * mult / (1 << 20))
	if mib > MaxMemoryMiB {
		return 0, fmt.Errorf("memory size %q is more than %d MiB", s, MaxMemoryMiB)
	}
	return int64(mib), nil
}
