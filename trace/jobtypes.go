package trace

import (
	"slices"
	"time"
)

// JobType is one job of MMK Table III as the job-level simulator knows it:
// measured on the H200 by bench/gpu/job-footprint.sh (device memory,
// CUDA context included, and start-up time to the first iteration:
// docs/results/job-footprint-h200.jsonl, the larger or mean of two runs)
// and the built-in kernel trace that stands for it in the kernel-level
// simulator (the same model where one was recorded, else the nearest).
type JobType struct {
	Name      string
	Online    bool
	MemoryMiB int64
	// Startup is the time from process start to its first iteration:
	// what a restart costs beyond its checkpoint.
	Startup time.Duration
	// Trace is the built-in kernel trace of the job or its stand-in.
	Trace string
}

// jobTypes are MMK Table III's jobs (bench/workloads/workload.py).
var jobTypes = []JobType{
	{"bert_train", false, 2074, 13680 * time.Millisecond, "bert_base_train_bs8"},
	{"densenet121_infer", true, 1222, 7570 * time.Millisecond, "resnet50_infer_bs32"},
	{"densenet121_train", false, 3188, 7510 * time.Millisecond, "densenet201_train_bs16"},
	{"densenet201_train", false, 4468, 8320 * time.Millisecond, "densenet201_train_bs16"},
	{"mobilenet_infer", true, 1192, 7170 * time.Millisecond, "mobilenet_v2_infer_bs32"},
	{"resnet152_train", false, 4388, 7720 * time.Millisecond, "resnet152_train_bs16"},
	{"resnet18_infer", true, 1114, 7090 * time.Millisecond, "resnet18_infer_bs32"},
	{"resnet50_infer", true, 1246, 7110 * time.Millisecond, "resnet50_infer_bs32"},
	{"resnet50_train", false, 4268, 7350 * time.Millisecond, "resnet50_train_bs32"},
	{"transformer_infer", true, 1046, 7030 * time.Millisecond, "resnet50_infer_bs32"},
	{"transformer_train", false, 3422, 7980 * time.Millisecond, "bert_base_train_bs8"},
	{"vgg16_infer", true, 3606, 8050 * time.Millisecond, "vgg16_infer_bs32"},
	{"vgg19_infer", true, 3646, 8550 * time.Millisecond, "vgg16_infer_bs32"},
	{"vgg19_train", false, 7094, 8610 * time.Millisecond, "vgg19_train_bs32"},
}

// Resnet50Batch1 is resnet50 inference at batch 1: the request of the
// SLO benchmark's svc-b1 (bench/gpu/slo.py) and of mmkd's end-to-end
// services, outside Table III (whose services run at batch 32). Its
// kernels are the built-in trace of the same name.
const Resnet50Batch1 = "resnet50_infer_bs1"

// variantTypes are job types outside Table III that checks against real
// runs simulate: the workload generators never draw them (JobTypes
// leaves them out; LookupJobType finds them).
var variantTypes = []JobType{
	// Not measured by job-footprint.sh at batch 1: the memory and
	// start-up of the same network at batch 32 (its activations are the
	// only part that grows with the batch, so batch 1 needs no more).
	{Resnet50Batch1, true, 1246, 7110 * time.Millisecond, "resnet50_infer_bs1"},
}

// JobTypes returns MMK Table III's jobs, sorted by name.
func JobTypes() []JobType { return slices.Clone(jobTypes) }

// LookupJobType finds a job type by name: one of Table III's or a
// variant outside it (Resnet50Batch1).
func LookupJobType(name string) (JobType, bool) {
	for _, types := range [][]JobType{jobTypes, variantTypes} {
		if i := slices.IndexFunc(types, func(t JobType) bool { return t.Name == name }); i >= 0 {
			return types[i], true
		}
	}
	return JobType{}, false
}

// jobTypesByKind splits the job types into online and offline ones.
func jobTypesByKind() (on, off []JobType) {
	for _, t := range jobTypes {
		if t.Online {
			on = append(on, t)
		} else {
			off = append(off, t)
		}
	}
	return on, off
}

// JobTraceOnline lists the kernel traces standing for online job types.
func JobTraceOnline() []string { return jobTraces(true) }

// JobTraceOffline lists the kernel traces standing for offline job types.
func JobTraceOffline() []string { return jobTraces(false) }

func jobTraces(online bool) []string {
	on, off := jobTypesByKind()
	types := off
	if online {
		types = on
	}
	var out []string
	for _, t := range types {
		if !slices.Contains(out, t.Trace) {
			out = append(out, t.Trace)
		}
	}
	slices.Sort(out)
	return out
}
