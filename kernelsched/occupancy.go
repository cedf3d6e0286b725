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
	threads := int(s.Block.Count())
	switch {
	case !s.Grid.Valid() || !s.Block.Valid():
		return Occupancy{}, fmt.Errorf("occupancy: grid %v and block %v must have no zero dimension", s.Grid, s.Block)
	case threads > l.MaxThreadsPerBlock:
		return Occupancy{}, fmt.Errorf("occupancy: block of %d threads exceeds %d", threads, l.MaxThreadsPerBlock)
	case s.Regs < 0 || s.Regs > l.MaxRegsPerThread:
		return Occupancy{}, fmt.Errorf("occupancy: %d registers per thread is outside 0..%d", s.Regs, l.MaxRegsPerThread)
	case s.SharedMem < 0 || s.SharedMem > l.SharedMemPerBlock:
		return Occupancy{}, fmt.Errorf("occupancy: %d bytes of shared memory per block is outside 0..%d", s.SharedMem, l.SharedMemPerBlock)
	case smCount < 1:
		return Occupancy{}, fmt.Errorf("occupancy: SM count %d must be at least 1", smCount)
	}
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
	sms := int(min(uint64(smCount), (blocks+uint64(best)-1)/uint64(best)))
	resident := min(blocks, uint64(best)*uint64(sms))
	return Occupancy{BlocksPerSM: best, SMs: sms, SharedMem: int64(resident) * int64(s.SharedMem), Limit: limit}, nil
}

func roundUp(v, unit int) int { return (v + unit - 1) / unit * unit }
