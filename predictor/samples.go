package predictor

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind says what a job's target measures.
type Kind string

const (
	// Online jobs (inference) are judged by latency: Target is the
	// iteration time in milliseconds.
	Online Kind = "online"
	// Offline jobs (training) are judged by throughput: Target is items
	// (samples) per second.
	Offline Kind = "offline"
)

// Util is what NVML measured on the GPU while a job ran alone: the
// features of MMK Table I that describe a job.
type Util struct {
	// SM is GPM's SM utilisation, percent of time SMs were busy.
	SM float64
	// Occupancy is GPM's SM occupancy, percent of warps resident.
	Occupancy float64
	// DRAM is GPM's DRAM bandwidth utilisation, percent of peak.
	DRAM float64
	// GPU and Mem are NVML's coarse utilisation rates, percent of time a
	// kernel ran and memory was read or written.
	GPU, Mem float64
}

// Add returns the sum of two utilisations (co-runners' contention).
func (u Util) Add(v Util) Util {
	return Util{SM: u.SM + v.SM, Occupancy: u.Occupancy + v.Occupancy, DRAM: u.DRAM + v.DRAM, GPU: u.GPU + v.GPU, Mem: u.Mem + v.Mem}
}

func (u Util) values() []float64 { return []float64{u.SM, u.Occupancy, u.DRAM, u.GPU, u.Mem} }

// Sample is one job's measurement in one run of a profiling campaign.
type Sample struct {
	Run        string // the run's key: its members, e.g. "bert_train@40+vgg16_infer@60"
	Job        string // job type, e.g. resnet50_train
	Kind       Kind
	Batch      int
	MPSPercent int
	SMs        int // SMs of the GPU instance
	CoRunners  int
	// JobUtil is the job's utilisation alone at 100 %.
	JobUtil Util
	// CoFeatures describe the co-runners: CoMPSPct, CoAboveSM and
	// CoBelowSM are in the extended columns (ExtColumns).
	CoFeatures
	ItemsPerS float64
	IterMs    float64
	// RunUtil is what the GPU showed during this run (not a feature).
	RunUtil Util

	// Extended is true for a sample read from a file with the extended
	// columns (ExtColumns; every file mmk writes now): then the next
	// fields were measured, else they are derived from the run's key
	// (priority 0 for every member, as CUDA gives without
	// CUDA_MPS_CLIENT_PRIORITY) and Rep and IterCV are zero.
	Extended bool
	// Rep numbers the repetitions of the same run (0, 1, ...).
	Rep int
	// MPSPriority is the job's CUDA_MPS_CLIENT_PRIORITY: 0 normal, 1
	// below normal.
	MPSPriority int
	// IterCV is the spread of the iteration times within the measured
	// window: their standard deviation over their mean (0: unknown).
	IterCV float64
}

// Target is what the predictor learns: latency in ms for online jobs,
// throughput in items/s for offline jobs.
func (s Sample) Target() float64 {
	if s.Kind == Online {
		return s.IterMs
	}
	return s.ItemsPerS
}

// Columns are the CSV header, in order. Units: percentages 0-100 (sums of
// co-runners may exceed 100), items per second, milliseconds.
var Columns = []string{
	"run", "job", "kind", "batch", "mps_pct", "instance_sms", "co_runners",
	"job_sm_util", "job_sm_occ", "job_dram_bw", "job_gpu_util", "job_mem_util",
	"co_sm_util", "co_sm_occ", "co_dram_bw", "co_gpu_util", "co_mem_util",
	"items_per_s", "iter_ms",
	"run_sm_util", "run_sm_occ", "run_dram_bw", "run_gpu_util", "run_mem_util",
}

// ExtColumns follow Columns in files with repetitions and MPS client
// priorities (every file mmk writes now; files with Columns alone are
// read too): the repetition, the job's client priority, the co-runners'
// summed MPS percentages, their SM utilisations above and below the
// job's priority, and the iteration times' spread in the window.
var ExtColumns = []string{"rep", "mps_prio", "co_mps_pct", "co_above_sm_util", "co_below_sm_util", "iter_cv"}

// Header is the dataset's provenance, written as "# key=value" lines.
type Header map[string]string

// WriteHeader writes the provenance and the column line of a new file.
func WriteHeader(w io.Writer, h Header, keys []string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# mmk profiling samples (see docs/predictor.md for columns and units)")
	for _, k := range keys {
		fmt.Fprintf(bw, "# %s=%s\n", k, h[k])
	}
	fmt.Fprintln(bw, strings.Join(Columns, ",")+","+strings.Join(ExtColumns, ","))
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write samples header: %w", err)
	}
	return nil
}

// Record is s as CSV fields in Columns order.
func (s Sample) Record() []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	out := []string{s.Run, s.Job, string(s.Kind), strconv.Itoa(s.Batch), strconv.Itoa(s.MPSPercent), strconv.Itoa(s.SMs), strconv.Itoa(s.CoRunners)}
	for _, u := range []Util{s.JobUtil, s.CoUtil} {
		for _, v := range u.values() {
			out = append(out, f(v))
		}
	}
	out = append(out, f(s.ItemsPerS), f(s.IterMs))
	for _, v := range s.RunUtil.values() {
		out = append(out, f(v))
	}
	return append(out, strconv.Itoa(s.Rep), strconv.Itoa(s.MPSPriority), strconv.Itoa(s.CoMPSPct), f(s.CoAboveSM), f(s.CoBelowSM), f(s.IterCV))
}

// ReadSamples reads a samples file: "#" lines are the header, then the
// column line, then one sample per line. Any bad field is an error naming
// its line and column.
func ReadSamples(r io.Reader) (Header, []Sample, error) {
	h := Header{}
	br := bufio.NewReader(r)
	line := 0
	for {
		peek, err := br.Peek(1)
		if err != nil || peek[0] != '#' {
			break
		}
		text, err := br.ReadString('\n')
		line++
		if k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(text, "#")), "="); ok {
			h[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		if err != nil {
			break
		}
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("samples line %d: column header: %w", line+1, err)
	}
	all := append(slices.Clone(Columns), ExtColumns...)
	if len(head) != len(Columns) && len(head) != len(all) {
		return nil, nil, fmt.Errorf("samples line %d: %d columns in the header, want %d (or %d without the extended columns)", line+1, len(head), len(all), len(Columns))
	}
	for i, c := range head {
		if c != all[i] {
			return nil, nil, fmt.Errorf("samples line %d column %d: header %q, want %q", line+1, i+1, c, all[i])
		}
	}
	cr.FieldsPerRecord = len(head)
	var out []Sample
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
			return nil, nil, fmt.Errorf("samples line %d: %w", pe.Line+line, pe.Err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("samples: %w", err)
		}
		ln, _ := cr.FieldPos(0)
		s, err := parseSample(rec)
		if err != nil {
			return nil, nil, fmt.Errorf("samples line %d %w", ln+line, err)
		}
		out = append(out, s)
	}
	return h, out, nil
}

// parseSample parses one record, with the extended columns or without;
// errors start with "column N (name): ".
func parseSample(rec []string) (Sample, error) {
	bad := func(i int, why string) error {
		name := ""
		if i < len(Columns) {
			name = Columns[i]
		} else {
			name = ExtColumns[i-len(Columns)]
		}
		return fmt.Errorf("column %d (%s): %q %s", i+1, name, rec[i], why)
	}
	num := func(i int, lo, hi float64) (float64, error) {
		v, err := strconv.ParseFloat(rec[i], 64)
		if err != nil || math.IsNaN(v) || v < lo || v > hi {
			return 0, bad(i, fmt.Sprintf("is not a number in %v..%v", lo, hi))
		}
		return v, nil
	}
	integer := func(i, lo, hi int) (int, error) {
		v, err := strconv.Atoi(rec[i])
		if err != nil || v < lo || v > hi {
			return 0, bad(i, fmt.Sprintf("is not an integer in %d..%d", lo, hi))
		}
		return v, nil
	}
	s := Sample{Run: rec[0], Job: rec[1], Kind: Kind(rec[2])}
	if s.Run == "" {
		return s, bad(0, "is empty")
	}
	if s.Job == "" {
		return s, bad(1, "is empty")
	}
	if s.Kind != KindOf(s.Job) {
		return s, bad(2, fmt.Sprintf("is not %s, the kind of %s (*_infer jobs are online, others offline)", KindOf(s.Job), s.Job))
	}
	var err error
	if s.Batch, err = integer(3, 1, 1<<20); err != nil {
		return s, err
	}
	if s.MPSPercent, err = integer(4, 1, 100); err != nil {
		return s, err
	}
	if s.SMs, err = integer(5, 1, 1<<16); err != nil {
		return s, err
	}
	if s.CoRunners, err = integer(6, 0, 64); err != nil {
		return s, err
	}
	utils := []*Util{&s.JobUtil, &s.CoUtil}
	for u, base := range []int{7, 12} {
		vals := make([]float64, 5)
		for j := range vals {
			if vals[j], err = num(base+j, 0, 100*65); err != nil {
				return s, err
			}
		}
		*utils[u] = Util{vals[0], vals[1], vals[2], vals[3], vals[4]}
	}
	if s.ItemsPerS, err = num(17, 0, 1e12); err != nil {
		return s, err
	}
	if s.IterMs, err = num(18, 0, 1e9); err != nil {
		return s, err
	}
	if s.Target() <= 0 {
		i := 17
		if s.Kind == Online {
			i = 18
		}
		return s, bad(i, "must be positive: it is the "+string(s.Kind)+" job's target")
	}
	vals := make([]float64, 5)
	for j := range vals {
		if vals[j], err = num(19+j, 0, 100*65); err != nil {
			return s, err
		}
	}
	s.RunUtil = Util{vals[0], vals[1], vals[2], vals[3], vals[4]}
	if len(rec) == len(Columns) {
		return s, deriveExtended(&s)
	}
	s.Extended = true
	e := len(Columns)
	if s.Rep, err = integer(e, 0, 1<<20); err != nil {
		return s, err
	}
	if s.MPSPriority, err = integer(e+1, 0, 1); err != nil {
		return s, err
	}
	if s.CoMPSPct, err = integer(e+2, 0, 100*64); err != nil {
		return s, err
	}
	if s.CoAboveSM, err = num(e+3, 0, 100*65); err != nil {
		return s, err
	}
	if s.CoBelowSM, err = num(e+4, 0, 100*65); err != nil {
		return s, err
	}
	if s.IterCV, err = num(e+5, 0, 1e3); err != nil {
		return s, err
	}
	return s, nil
}

// deriveExtended fills a sample of a file without the extended columns
// from its run's key: every member ran at client priority 0.
func deriveExtended(s *Sample) error {
	run, err := ParseRunKey(s.Run)
	if err != nil {
		return fmt.Errorf("column 1 (run): %w", err)
	}
	co, err := run.Without(s.Job, s.MPSPercent, s.MPSPriority)
	if err != nil {
		return fmt.Errorf("column 1 (run): %w", err)
	}
	if len(co) != s.CoRunners {
		return fmt.Errorf("column 7 (co_runners): %d, but run %s has %d other members", s.CoRunners, s.Run, len(co))
	}
	for _, m := range co {
		s.CoMPSPct += m.Percent
	}
	return nil
}

// KindOf is a job type's kind from its name: *_infer jobs are online,
// others offline.
func KindOf(job string) Kind {
	if strings.HasSuffix(job, "_infer") {
		return Online
	}
	return Offline
}
