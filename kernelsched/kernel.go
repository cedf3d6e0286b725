package kernelsched

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Dim3 is a CUDA launch dimension: x, y, z.
type Dim3 [3]uint32

// Count is x*y*z, saturated at the largest uint64.
func (d Dim3) Count() uint64 {
	xy := uint64(d[0]) * uint64(d[1]) // fits: both below 2^32
	hi, lo := bits.Mul64(xy, uint64(d[2]))
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// Valid reports whether every component is at least 1.
func (d Dim3) Valid() bool { return d[0] > 0 && d[1] > 0 && d[2] > 0 }

// String is "x,y,z".
func (d Dim3) String() string {
	return strconv.FormatUint(uint64(d[0]), 10) + "," + strconv.FormatUint(uint64(d[1]), 10) + "," + strconv.FormatUint(uint64(d[2]), 10)
}

// KernelID identifies a kernel the way FIKIT does: its name and its launch
// geometry. The same function launched with another grid or block is
// another kernel id, because its duration differs.
type KernelID struct {
	Name  string
	Grid  Dim3
	Block Dim3
}

// String is "name<<<grid|block>>>".
func (k KernelID) String() string {
	return k.Name + "<<<" + k.Grid.String() + "|" + k.Block.String() + ">>>"
}

// Validate reports an empty name or a zero dimension.
func (k KernelID) Validate() error {
	if strings.TrimSpace(k.Name) == "" {
		return fmt.Errorf("kernel name is empty")
	}
	if !k.Grid.Valid() {
		return fmt.Errorf("kernel %q: grid %v has a zero dimension", k.Name, k.Grid)
	}
	if !k.Block.Valid() {
		return fmt.Errorf("kernel %q: block %v has a zero dimension", k.Name, k.Block)
	}
	return nil
}
