package kernelsched

import "fmt"

// SMLimits are the per-SM limits that bound how many blocks of a kernel
// one streaming multiprocessor holds at once.
type SMLimits struct {
	WarpSize           int // threads per warp
	MaxThreadsPerSM    int
	MaxBlocksPerSM     int
	RegistersPerSM     int // 32-bit registers
	RegisterAllocUnit  int // registers are allocated per warp in units of this many
	SharedMemPerSM     int // bytes usable by blocks
	SharedMemPerBlock  int // bytes one block may use at most
	ReservedSharedMem  int // bytes the driver reserves per resident block
	MaxRegsPerThread   int
	MaxThreadsPerBlock int
}

// Hopper is the SM of compute capability 9.0 (H100, H200), from the CUDA
// occupancy tables.
var Hopper = SMLimits{
	WarpSize:           32,
	MaxThreadsPerSM:    2048,
	MaxBlocksPerSM:     32,
	RegistersPerSM:     65536,
	RegisterAllocUnit:  256,
	SharedMemPerSM:     228 * 1024,
	SharedMemPerBlock:  227 * 1024,
	ReservedSharedMem:  1024,
	MaxRegsPerThread:   255,
	MaxThreadsPerBlock: 1024,
}

// Shape is what the scheduler knows of one launch besides its id: the
// resources a block needs.
type Shape struct {
	Grid, Block Dim3
	Regs        int // registers per thread
	SharedMem   int // bytes of shared memory per block (static + dynamic)
}

// Occupancy is how a kernel fills SMs: resident blocks per SM and how many
// SMs its grid occupies in its first wave.
type Occupancy struct {
	BlocksPerSM int
	// SMs is the SMs the kernel keeps busy: its blocks spread one wave
	// over at most smCount SMs.
	SMs int
	// SharedMem is the shared memory, in bytes, its resident blocks hold
	// on those SMs.
	SharedMem int64
	// Limit names what bounds BlocksPerSM: threads, blocks, registers or
	// shared memory.
	Limit string
}

// Occupancy computes the kernel's occupancy on SMs with these limits, the
// calculation of the CUDA occupancy calculator. smCount is the SMs the
// launch may use (the instance's SMs times the MPS percentage).
func (l SMLimits) Occupancy(s Shape, smCount int) (Occupancy, error) {
	switch {
	case !s.Grid.Valid() || !s.Block.Valid():
		return Occupancy{}, fmt.Errorf("occupancy: grid %v and block %v must have no zero dimension", s.Grid, s.Block)
	case s.Block.Count() > uint64(l.MaxThreadsPerBlock):
		return Occupancy{}, fmt.Errorf("occupancy: block %v has %d threads, more than %d", s.Block, s.Block.Count(), l.MaxThreadsPerBlock)
	case s.Regs < 0 || s.Regs > l.MaxRegsPerThread:
		return Occupancy{}, fmt.Errorf("occupancy: %d registers per thread is outside 0..%d", s.Regs, l.MaxRegsPerThread)
	case s.SharedMem < 0 || s.SharedMem > l.SharedMemPerBlock:
		return Occupancy{}, fmt.Errorf("occupancy: %d bytes of shared memory per block is outside 0..%d", s.SharedMem, l.SharedMemPerBlock)
	case smCount < 1:
		return Occupancy{}, fmt.Errorf("occupancy: SM count %d must be at least 1", smCount)
	}
	threads := int(s.Block.Count())
	warps := (threads + l.WarpSize - 1) / l.WarpSize
	best, limit := l.MaxBlocksPerSM, "blocks"
	if byThreads := l.MaxThreadsPerSM / (warps * l.WarpSize); byThreads < best {
		best, limit = byThreads, "threads"
	}
	if s.Regs > 0 {
		perWarp := roundUp(s.Regs*l.WarpSize, l.RegisterAllocUnit)
		if byRegs := (l.RegistersPerSM / perWarp) / warps; byRegs < best {
			best, limit = byRegs, "registers"
		}
	}
	if s.SharedMem > 0 {
		if bySmem := l.SharedMemPerSM / (s.SharedMem + l.ReservedSharedMem); bySmem < best {
			best, limit = bySmem, "shared memory"
		}
	}
	if best < 1 {
		return Occupancy{}, fmt.Errorf("occupancy: a block of %d threads, %d registers and %d bytes of shared memory does not fit one SM (%s)", threads, s.Regs, s.SharedMem, limit)
	}
	blocks := s.Grid.Count()
	need := blocks / uint64(best) // SMs the grid fills, rounded up
	if blocks%uint64(best) != 0 {
		need++
	}
	sms := int(min(uint64(smCount), need))
	resident := min(blocks, uint64(best)*uint64(sms))
	return Occupancy{BlocksPerSM: best, SMs: sms, SharedMem: int64(resident) * int64(s.SharedMem), Limit: limit}, nil
}

func roundUp(v, unit int) int { return (v + unit - 1) / unit * unit }

// validate rejects limits the occupancy calculation would divide by zero with.
func (l SMLimits) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"warp size", l.WarpSize}, {"max threads per SM", l.MaxThreadsPerSM}, {"max blocks per SM", l.MaxBlocksPerSM},
		{"registers per SM", l.RegistersPerSM}, {"register allocation unit", l.RegisterAllocUnit},
		{"shared memory per SM", l.SharedMemPerSM}, {"max threads per block", l.MaxThreadsPerBlock},
	} {
		if f.v < 1 {
			return fmt.Errorf("SM limits: %s %d must be at least 1", f.name, f.v)
		}
	}
	if l.ReservedSharedMem < 0 || l.SharedMemPerBlock < 0 || l.MaxRegsPerThread < 0 {
		return fmt.Errorf("SM limits: reserved shared memory %d, shared memory per block %d and registers per thread %d must not be negative",
			l.ReservedSharedMem, l.SharedMemPerBlock, l.MaxRegsPerThread)
	}
	return nil
}
