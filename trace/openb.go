package trace

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OpenBPod is one row of a pod list of the Alibaba openb trace
// (alibaba/clusterdata, cluster-trace-gpu-v2023), whichever variant: the
// default list, the gpuspec, gpushare and cpu variants (every column)
// and the multigpu variants (name, cpu_milli, memory_mib, num_gpu,
// gpu_milli only: no qos and no times).
type OpenBPod struct {
	Name string
	// GPUs is num_gpu (0 to 8); Milli is gpu_milli, the share of one GPU
	// a single-GPU pod asks for in thousandths (1000 where the list has
	// no gpu_milli, as the trace's own converter reads it).
	GPUs, Milli int
	// QoS is LS, Guaranteed, BE or Burstable; empty where the list has
	// no qos column.
	QoS string
	// Times says whether the list has creation, scheduled and deletion
	// times. Scheduled and Deleted are false for a pod never scheduled or
	// never deleted (the trace leaves the cell empty).
	Times                       bool
	Created, ScheduledAt, Ended int64
	Scheduled, Deleted          bool
}

// ReadOpenBPods reads a pod list of any variant of the openb trace. It
// needs the columns name and num_gpu; gpu_milli and qos are optional,
// and creation_time, scheduled_time and deletion_time come all three or
// none.
func ReadOpenBPods(r io.Reader) ([]OpenBPod, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("openb: header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, c := range []string{"name", "num_gpu"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("openb: header lacks column %q", c)
		}
	}
	timeCols := []string{"creation_time", "scheduled_time", "deletion_time"}
	has := 0
	for _, c := range timeCols {
		if _, ok := col[c]; ok {
			has++
		}
	}
	if has != 0 && has != len(timeCols) {
		return nil, fmt.Errorf("openb: header has %d of the columns %s: want all or none", has, strings.Join(timeCols, ", "))
	}
	_, hasMilli := col["gpu_milli"]
	_, hasQoS := col["qos"]
	var out []OpenBPod
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("openb: %w", err)
		}
		cell := func(c string) string { return strings.TrimSpace(rec[col[c]]) }
		num := func(c string) (int64, error) {
			v, err := strconv.ParseInt(cell(c), 10, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("openb line %d: column %s: %q is not an integer >= 0", line, c, cell(c))
			}
			return v, nil
		}
		p := OpenBPod{Name: cell("name"), Milli: 1000, Times: has > 0}
		if p.Name == "" {
			return nil, fmt.Errorf("openb line %d: column name is empty", line)
		}
		g, err := num("num_gpu")
		if err != nil {
			return nil, err
		}
		if g > 64 {
			return nil, fmt.Errorf("openb line %d: column num_gpu: %d GPUs: want at most 64", line, g)
		}
		p.GPUs = int(g)
		if hasMilli {
			m, err := num("gpu_milli")
			if err != nil {
				return nil, err
			}
			if m > 1000 {
				return nil, fmt.Errorf("openb line %d: column gpu_milli: %d: want 0..1000 (thousandths of one GPU)", line, m)
			}
			p.Milli = int(m)
		}
		if hasQoS {
			switch q := cell("qos"); q {
			case "LS", "Guaranteed", "BE", "Burstable":
				p.QoS = q
			default:
				return nil, fmt.Errorf("openb line %d: qos %q is not one of LS, Guaranteed, BE, Burstable", line, q)
			}
		}
		if p.Times {
			if p.Created, err = num("creation_time"); err != nil {
				return nil, err
			}
			if cell("scheduled_time") != "" {
				if p.ScheduledAt, err = num("scheduled_time"); err != nil {
					return nil, err
				}
				p.Scheduled = true
			}
			if cell("deletion_time") != "" {
				if p.Ended, err = num("deletion_time"); err != nil {
					return nil, err
				}
				p.Deleted = true
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// OpenBServiceBusy is the fraction of the GPU share it asked for that a
// latency-sensitive pod's requests keep busy: the trace records shares,
// not use, so this is mmk's choice (a service asking for a whole GPU is
// busy a quarter of the time, like the synthetic services' 5-25 %).
const OpenBServiceBusy = 0.25

// OpenBJobs turns openb pods into a job trace of its first n jobs by
// creation time (n <= 0: all). The work model, documented in
// docs/results/partition.md, uses only what the trace records, a pod's
// GPU request and how long it ran:
//   - pods that never ran (no scheduled or deletion time, or deleted at
//     or before being scheduled) and pods without a GPU are left out;
//   - qos LS and Guaranteed are online jobs (services), BE, Burstable and
//     no qos offline jobs;
//   - the job type is one of Table III's of that kind, chosen by a hash
//     of the pod name (the trace names no model);
//   - an offline pod's work is its run time (deletion - scheduled) times
//     its GPU share (gpu_milli / 1000): the GPU time it asked for, done
//     alone on a whole GPU;
//   - an online pod serves requests for its run time, its requests
//     keeping OpenBServiceBusy of its share busy;
//   - a pod asking for k > 1 GPUs is k jobs, each a whole GPU for its run
//     time (the simulators place jobs, not gangs);
//   - a single-GPU pod's memory is its share of the GPU's, and at least
//     its type's;
//   - arrival is creation_time, relative to the first arrival.
//
// A list without times (the multigpu variants) cannot be replayed.
func OpenBJobs(pods []OpenBPod, n int, gpuMemMiB int64) ([]SimJob, error) {
	if gpuMemMiB <= 0 {
		return nil, fmt.Errorf("openb: GPU memory %d MiB: want > 0", gpuMemMiB)
	}
	if len(pods) > 0 && !pods[0].Times {
		return nil, errors.New("openb: the pod list has no creation_time, scheduled_time or deletion_time (the multigpu variants list a job mix without times): it cannot be replayed")
	}
	on, off := jobTypesByKind()
	var out []SimJob
	for _, p := range pods {
		if p.GPUs == 0 || !p.Scheduled || !p.Deleted || p.Ended <= p.ScheduledAt || (p.GPUs == 1 && p.Milli == 0) {
			continue
		}
		isOn := p.QoS == "LS" || p.QoS == "Guaranteed"
		types := off
		if isOn {
			types = on
		}
		h := fnv.New32a()
		h.Write([]byte(p.Name))
		jt := types[int(h.Sum32()%uint32(len(types)))]
		share := float64(p.Milli) / 1000
		mem := max(jt.MemoryMiB, int64(p.Milli)*gpuMemMiB/1000)
		if p.GPUs > 1 {
			share, mem = 1, gpuMemMiB
		}
		run := float64(p.Ended - p.ScheduledAt)
		j := SimJob{Type: jt.Name, Online: isOn, Arrival: time.Duration(p.Created) * time.Second, MemoryMiB: mem}
		if isOn {
			j.Work = time.Duration(run) * time.Second
			j.Load = share * OpenBServiceBusy
		} else {
			j.Work = max(time.Second, time.Duration(run*share*float64(time.Second)).Round(time.Second))
		}
		for k := range p.GPUs {
			j.ID = p.Name
			if p.GPUs > 1 {
				j.ID = p.Name + "/" + strconv.Itoa(k)
			}
			out = append(out, j)
		}
	}
	slices.SortStableFunc(out, func(a, b SimJob) int { return cmp.Compare(a.Arrival, b.Arrival) })
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	if len(out) == 0 {
		return nil, errors.New("openb: no pod with a GPU ran")
	}
	first := out[0].Arrival
	for i := range out {
		out[i].Arrival -= first
	}
	return out, nil
}
