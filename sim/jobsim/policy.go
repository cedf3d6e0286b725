package jobsim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mmkgpu/mmk/partitioner"
)

// Job-level policies: what shares the GPUs. A policy is named by one of
// these, optionally followed by +option or -option (Options) to add or
// take away one of Algorithm 1's named options, e.g.
// "alg1+full-demand" or "mmk-gate".
const (
	// JobDefault: every job on a whole GPU, no limits: time slicing.
	JobDefault = "default"
	// JobMPS: every job under one MPS daemon per GPU, no limits.
	JobMPS = "mps"
	// JobMPSInMIG is JobMPS inside each GPU's whole-GPU MIG instance
	// (98 of the A100's 108 SMs): what MIG mode alone costs plain MPS.
	JobMPSInMIG = "mps-mig"
	// JobMPSPrio is JobMPS with MPS client priority set by hand (online
	// jobs at 0, offline at 1, CUDA_MPS_CLIENT_PRIORITY): the strongest
	// simple alternative measured on the H100 (docs/results/mmkd-e2e-h100.md).
	JobMPSPrio = "mps-prio"
	// JobMISO is MISO (Li et al., SoCC 2022) as its paper and code
	// describe it: one job per MIG slice, the layout of least mean
	// slowdown, strict first come first served, and on each arrival that
	// joins running jobs a 30 s MPS phase with a checkpoint of the jobs
	// before and after (partitioner/baselines.MISO).
	JobMISO = "miso"
	// JobMISOGreedy is today's MISO-like rule, kept for comparison:
	// Algorithm 1 with one job per instance, first come first served, no
	// MPS phase ("miso" before issue 21).
	JobMISOGreedy = "miso-greedy"
	// JobMIGER is MIGER (Zhang et al., ICPP 2024) as its paper and code
	// describe it: each online service in the smallest slice meeting its
	// latency target, at most one offline job beside it, at most 4 jobs
	// per GPU, the GPU of least load, the head of the queue retried every
	// 35 s (partitioner/baselines.MIGER).
	JobMIGER = "miger"
	// JobAlg1Unprotected is Algorithm 1 without MMK's two protections
	// (online shares kept, MIG left alone under online jobs): the
	// "MIGER-like" policy before issue 21.
	JobAlg1Unprotected = "alg1-unprotected"
	// JobAlg1 is Algorithm 1 with MMK's protections as the simulator had
	// it before issue 21 (MPSConfig hands out slivers; "mmk-alg1").
	JobAlg1 = "alg1"
	// JobMMK is Algorithm 1 with the options mmk runs with (MMKOptions).
	JobMMK = "mmk"
)

// Option names of Algorithm 1 that a policy can add or take away.
const (
	OptFullDemand    = "full-demand"     // partitioner.Options.FullDemand
	OptOnlineReclaim = "online-reclaim"  // partitioner.Options.OnlineReclaim
	OptMIGKeepOnline = "mig-keep-online" // partitioner.Options.MIGKeepOnline
	OptOnlineFirst   = "online-first"    // partitioner.Options.OnlineFirst
	OptArrivalOrder  = "arrival-order"   // partitioner.Options.ArrivalOrder
	OptPriority      = "priority"        // PriorityShares and MPS client priority
	OptGate          = "gate"            // partitioner.DecideGated with the restart costs
	OptKernel        = "kernel"          // the kernel scheduler's measured effect
	OptSLO           = "slo"             // partitioner.Options.SLOGuard with each service's need
	OptFixedMIG      = "fixed-mig"       // partitioner.Options.FixedMIG, and MIG mode off: the whole GPU, layouts never change
	OptSpread        = "spread"          // partitioner.Options.Spread
	// OptOracle decides with the ground truth instead of the predictor
	// (Config.OracleError adds a known error): an upper bound, not a
	// policy anyone can run.
	OptOracle = "oracle"
)

// Options lists the option names, in the ablation's order.
func Options() []string {
	return []string{OptFullDemand, OptOnlineReclaim, OptMIGKeepOnline, OptOnlineFirst, OptArrivalOrder, OptPriority, OptSLO, OptGate, OptKernel, OptFixedMIG, OptSpread, OptOracle}
}

// MMKOptions are the options JobMMK runs with: the ones that the
// ablation in docs/results/partition.md shows help, and MIG mode off
// (fixed-mig): a slice runs far below an MPS share of as many SMs
// (docs/results/simcheck-h100.md, MIG slices), so mmk takes MIG only
// where a measured case shows it wins (mmk-fixed-mig manages it).
var MMKOptions = []string{OptMIGKeepOnline, OptPriority, OptSLO, OptGate, OptSpread, OptArrivalOrder, OptFixedMIG}

// MMKD is mmkd's placement as it ships, as the simulator names it: mmk,
// MIG left alone (mig.manage off), placement.spread and slo_guard on, no
// cap on an instance's jobs. One difference stays: mmkd derives a
// service's need from its target alone (slo.Target.Need), the simulator
// from its target and its request load (an M/D/1 queue).
const MMKD = JobMMK

// Policies lists the policies of the main comparison.
func Policies() []string {
	return []string{JobDefault, JobMPS, JobMPSPrio, JobMISO, JobMISOGreedy, JobMIGER, JobAlg1Unprotected, JobMMK}
}

// kind is how a policy shares GPUs.
type kind int

const (
	kindDefault kind = iota
	kindMPS
	kindAlg1
	kindMIGER
	kindMISO
)

// Policy is a parsed policy name.
type Policy struct {
	Name string
	kind kind
	opts []string // Algorithm 1's named options
	// base options of the Algorithm 1 policies
	unprotected, greedy bool
	// mig: JobMPSInMIG
	mig bool
	// prio: JobMPSPrio
	prio bool
}

// Has reports whether the policy runs with a named option.
func (p Policy) Has(opt string) bool { return slices.Contains(p.opts, opt) }

// basePolicies are the policies by base name.
var basePolicies = map[string]Policy{
	JobDefault:         {kind: kindDefault},
	JobMPS:             {kind: kindMPS},
	JobMPSInMIG:        {kind: kindMPS, mig: true},
	JobMPSPrio:         {kind: kindMPS, prio: true},
	JobMISO:            {kind: kindMISO},
	JobMIGER:           {kind: kindMIGER},
	JobMISOGreedy:      {kind: kindAlg1, greedy: true},
	JobAlg1Unprotected: {kind: kindAlg1, unprotected: true},
	JobAlg1:            {kind: kindAlg1},
	JobMMK:             {kind: kindAlg1, opts: MMKOptions},
}

// ParsePolicy reads a policy name: one of Policies (or alg1, mps-mig),
// then any number of +option or -option for Algorithm 1's policies.
func ParsePolicy(name string) (Policy, error) {
	p, rest, found := Policy{}, "", false
	// Longer names first: alg1-unprotected before alg1, mps-mig and
	// mps-prio before mps.
	for _, b := range []string{JobAlg1Unprotected, JobMISOGreedy, JobMPSInMIG, JobMPSPrio, JobDefault, JobMPS, JobMISO, JobMIGER, JobAlg1, JobMMK} {
		if name == b || strings.HasPrefix(name, b+"+") || strings.HasPrefix(name, b+"-") {
			p, rest, found = basePolicies[b], name[len(b):], true
			break
		}
	}
	if !found {
		return Policy{}, fmt.Errorf("policy %q: not one of %s, alg1 (with +option or -option: %s)", name, strings.Join(Policies(), ", "), strings.Join(Options(), ", "))
	}
	p.Name, p.opts = name, slices.Clone(p.opts)
	for rest != "" {
		sign := rest[0]
		rest = rest[1:]
		// Option names hold '-': take the longest one that ends where
		// the name ends or the next option starts.
		opt := ""
		for _, o := range Options() {
			if strings.HasPrefix(rest, o) && (len(rest) == len(o) || rest[len(o)] == '+' || rest[len(o)] == '-') && len(o) > len(opt) {
				opt = o
			}
		}
		if opt == "" {
			return Policy{}, fmt.Errorf("policy %q: option %q is not one of %s", name, rest, strings.Join(Options(), ", "))
		}
		if p.kind != kindAlg1 {
			return Policy{}, fmt.Errorf("policy %q: options apply to Algorithm 1's policies only", name)
		}
		rest = rest[len(opt):]
		if sign == '+' && !p.Has(opt) {
			p.opts = append(p.opts, opt)
		}
		if sign == '-' {
			p.opts = slices.DeleteFunc(p.opts, func(o string) bool { return o == opt })
		}
	}
	return p, nil
}

// options is the partitioner's options for an Algorithm 1 policy.
func (p Policy) options(maxShare int) partitioner.Options {
	o := partitioner.Options{
		FixOnlinePercent:   !p.unprotected && !p.greedy,
		MIGUnderOnline:     p.unprotected || p.greedy,
		MaxJobsPerInstance: maxShare,
		FullDemand:         p.Has(OptFullDemand),
		OnlineReclaim:      p.Has(OptOnlineReclaim),
		MIGKeepOnline:      p.Has(OptMIGKeepOnline),
		OnlineFirst:        p.Has(OptOnlineFirst),
		ArrivalOrder:       p.Has(OptArrivalOrder),
		PriorityShares:     p.Has(OptPriority),
		SLOGuard:           p.Has(OptSLO),
		FixedMIG:           p.Has(OptFixedMIG),
		Spread:             p.Has(OptSpread),
	}
	if p.greedy {
		o.MaxJobsPerInstance, o.ArrivalOrder = 1, true
	}
	return o
}

// priority reports whether MPS client priority runs (online jobs at 0,
// offline at 1).
func (p Policy) priority() bool { return p.prio || p.Has(OptPriority) }

// migOnly reports whether jobs run alone in MIG instances without an MPS
// limit.
func (p Policy) migOnly() bool { return p.kind == kindMISO || p.greedy }
