package jobsim

import "github.com/mmkgpu/mmk/trace"

// No profiling campaign measured resnet50 at batch 1 (the profiles run
// every service at batch 32), yet the SLO benchmark's svc-b1 and mmkd's
// end-to-end services serve it. The ground truth takes it from its real
// kernel trace (trace.Resnet50Batch1: 218 kernels an iteration, recorded
// on the H200), and from resnet50 at batch 32 only what no trace holds.
// TestBatch1FromTrace recomputes the trace's numbers.
const (
	// batch1LatencyMs is its iteration alone on the whole GPU, measured
	// without the profiler (the traces' summary.txt).
	batch1LatencyMs = 3.30
	// batch1Busy is the share of its iteration the GPU runs its kernels
	// alone on the whole GPU: 0.80 ms of kernels in 3.30 ms (the trace
	// and summary.txt; the kernel-level simulator replaying it gives
	// 0.24 too). The rest is the host launching them.
	batch1Busy = 0.241
	// batch1Occ is the share of the GPU's warp slots its kernels fill,
	// over its iteration alone: each kernel's achieved occupancy (the
	// profiler's) times the share of the 132 SMs its grid covers, times
	// its duration. The same sum on the traces of six batch-32 jobs
	// gives 0.32-0.55 against their measured SM occupancy of 0.33-0.52
	// (within 23 % but resnet18_infer, +38 %).
	batch1Occ = 0.0421
)

// batch1Alone is its speed alone at 10, 20, ... 100 % of the whole GPU
// over its speed at 100 %: the kernel-level simulator (package sim: the
// MPS model with block residency and share stretch, host time
// calibrated to summary.txt's iteration) replaying its trace back to
// back at each share. Its grids fill few SMs and the host paces it, so
// it keeps its speed down to 20 %. The same replay of resnet50 at batch
// 32 is within 11 % of that job's measured curve at 50-100 % and 18-24 %
// below it under 50 %.
var batch1Alone = [steps]float64{0.8486, 0.9947, 0.9970, 0.9985, 0.9985, 0.9985, 1, 1, 1, 1}

// batch1Like is the Table III type batch1 takes from what no trace holds.
const batch1Like = "resnet50_infer"

// addBatch1 adds trace.Resnet50Batch1 to a model that knows batch1Like
// (after the fit, which it does not change):
//
//   - its alone curve, busy share, latency and occupancy from its trace
//     (above); its occupancy at p % is batch1Occ times its speed there
//     (the same kernels, spread over a longer iteration);
//   - its DRAM use: resnet50 at batch 32's per occupied warp slot alone
//     on the whole GPU (0.85 of peak per unit of occupancy) times its
//     own occupancy, 3.6 % of peak at 100 %: no trace holds bytes moved,
//     and at this size it loads a co-runner's memory little either way;
//   - its memory interference: batch 32's fitted coefficient times the
//     share of its iteration on the GPU relative to batch 32's (only
//     its kernels meet a co-runner's traffic; no co-located run of
//     batch 1 to fit its own).
func (m *SpeedModel) addBatch1() {
	like := batch1Like
	if !m.Has(like) || m.Has(trace.Resnet50Batch1) || m.occ[like][steps-1] <= 0 || m.gpuBusy[like] <= 0 {
		return
	}
	name := trace.Resnet50Batch1
	perOcc := m.dram[like][steps-1] / m.occ[like][steps-1]
	m.alone[name] = batch1Alone[:]
	m.occ[name] = make([]float64, steps)
	m.dram[name] = make([]float64, steps)
	for k, v := range batch1Alone {
		m.occ[name][k] = batch1Occ * v
		m.dram[name][k] = perOcc * batch1Occ * v
	}
	m.gpuBusy[name] = batch1Busy
	m.latencyMs[name] = batch1LatencyMs
	m.interference[name] = m.interference[like] * batch1Busy / m.gpuBusy[like]
}
