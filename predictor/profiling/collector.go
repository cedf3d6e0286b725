// Package profiling runs a profiling campaign on a real GPU: each run of
// the plan starts its workload processes under MPS at their percentages,
// measures them and the GPU, and appends one sample per job to a CSV
// file. The next run's processes are prepared (Python imports, model
// built on the CPU) while the current run measures. A campaign that stops
// midway resumes where it stopped: runs already in the file are skipped.
package profiling

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/predictor"
)

// Meter measures the GPU between Start and Stop.
type Meter interface {
	Start() error
	Stop() (predictor.Util, error)
}

// Config is one campaign.
type Config struct {
	// Python and Script run one workload (bench/workloads/workload.py).
	Python, Script string
	// Warmup and Measure are each workload's warm-up and measured time.
	Warmup, Measure time.Duration
	// Steps are the runs and their repetitions, in the order to measure
	// them (predictor.Steps).
	Steps []predictor.Step
	// Out is the CSV file; Header its provenance (new files only).
	Out        string
	Header     predictor.Header
	HeaderKeys []string
	// ClientEnv is the environment a workload at an MPS percentage and
	// client priority needs.
	ClientEnv func(m predictor.Member) []string
	// SMs is the instance's SMs, recorded in each sample.
	SMs   int
	Meter Meter
	// Log receives progress lines.
	Log io.Writer
	// Deadline: no run starts after it (zero: none).
	Deadline time.Time
	// Timeout bounds each step of a process (ready, measuring, result).
	Timeout time.Duration
}

// Result counts a campaign's runs.
type Result struct {
	Done, AlreadyDone, Failed, Left int
}

// result is a workload's final JSON line.
type result struct {
	Job       string  `json:"job"`
	Batch     int     `json:"batch"`
	Iters     int     `json:"iters"`
	ItemsPerS float64 `json:"items_per_s"`
	IterMsP50 float64 `json:"iter_ms_p50"`
	// IterCV is the iteration times' standard deviation over their mean
	// (0 from a workload that does not report it).
	IterCV float64 `json:"iter_cv"`
}

// Collect runs the campaign's runs that Out does not hold yet.
func Collect(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 3 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	done, utils, err := readDone(cfg)
	if err != nil {
		return Result{}, err
	}
	f, err := os.OpenFile(cfg.Out, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return Result{}, fmt.Errorf("profile: %w", err)
	}
	defer f.Close()

	var res Result
	var remaining []predictor.Step
	for _, st := range cfg.Steps {
		if done[st.ID()] {
			res.AlreadyDone++
		} else {
			remaining = append(remaining, st)
		}
	}
	fmt.Fprintf(cfg.Log, "profile: %d runs, %d already in %s, %d to do\n", len(cfg.Steps), res.AlreadyDone, cfg.Out, len(remaining))
	start := time.Now()
	var next *group
	defer func() {
		if next != nil {
			next.kill()
		}
	}()
	for i, step := range remaining {
		if ctx.Err() != nil || (!cfg.Deadline.IsZero() && time.Now().After(cfg.Deadline)) {
			res.Left = len(remaining) - i
			break
		}
		cur := next
		if cur == nil {
			cur = prepare(ctx, cfg, step)
		}
		next = nil
		if i+1 < len(remaining) {
			next = prepare(ctx, cfg, remaining[i+1])
		}
		samples, err := execute(ctx, cfg, cur, utils)
		if err != nil {
			res.Failed++
			fmt.Fprintf(cfg.Log, "profile: run %s failed: %v\n", step.ID(), err)
			continue
		}
		// One write per run: a crash leaves whole runs, or a torn last
		// line that the next start cuts off.
		var b strings.Builder
		for _, s := range samples {
			b.WriteString(strings.Join(s.Record(), ",") + "\n")
		}
		if _, err := f.WriteString(b.String()); err != nil {
			return res, fmt.Errorf("profile: write %s: %w", cfg.Out, err)
		}
		if err := f.Sync(); err != nil {
			return res, fmt.Errorf("profile: write %s: %w", cfg.Out, err)
		}
		res.Done++
		el := time.Since(start)
		eta := time.Duration(float64(el) / float64(i+1) * float64(len(remaining)-i-1))
		fmt.Fprintf(cfg.Log, "profile: [%d/%d] %s %s (elapsed %s, about %s left)\n", i+1, len(remaining), step.ID(), describe(samples), el.Round(time.Second), eta.Round(time.Second))
	}
	return res, ctx.Err()
}

func describe(ss []predictor.Sample) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("%s %.1f items/s %.2f ms", s.Job, s.ItemsPerS, s.IterMs)
	}
	return strings.Join(parts, "; ")
}

// readDone creates Out with its header if it does not exist, else reads
// the steps it holds (predictor.Step.ID) and the utilisations of its
// alone runs (their first repetition: the one the features of later
// runs were taken from).
func readDone(cfg Config) (map[string]bool, map[string]predictor.Util, error) {
	done, utils := map[string]bool{}, map[string]predictor.Util{}
	f, err := os.Open(cfg.Out)
	if errors.Is(err, os.ErrNotExist) {
		nf, err := os.OpenFile(cfg.Out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("profile: %w", err)
		}
		if err := predictor.WriteHeader(nf, cfg.Header, cfg.HeaderKeys); err != nil {
			nf.Close()
			return nil, nil, err
		}
		return done, utils, nf.Close()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("profile: %w", err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("profile: %w", err)
	}
	samples, keep, err := completeRuns(data)
	if err != nil {
		return nil, nil, fmt.Errorf("profile: resume from %s: %w", cfg.Out, err)
	}
	if len(samples) > 0 && !samples[0].Extended {
		return nil, nil, fmt.Errorf("profile: resume from %s: it has no repetition and priority columns (%s; written before them): start a new file", cfg.Out, strings.Join(predictor.ExtColumns, ", "))
	}
	if len(keep) != len(data) {
		// A crash tore the last line or left a run half written: drop it,
		// the run is measured again.
		fmt.Fprintf(cfg.Log, "profile: %s ends in an unfinished run; removing it\n", cfg.Out)
		if err := atomicfile.Write(cfg.Out, keep); err != nil {
			return nil, nil, fmt.Errorf("profile: %w", err)
		}
	}
	for _, s := range samples {
		// completeRuns parsed every run's key: they are the keys the
		// campaign wrote.
		done[predictor.StepID(s.Run, s.Rep)] = true
		if s.CoRunners == 0 && s.Rep == 0 {
			utils[s.Run] = s.RunUtil
		}
	}
	return done, utils, nil
}

// completeRuns parses a samples file and returns its samples of complete
// runs and the file's bytes without a torn last line or the rows of runs
// that have fewer samples than members.
func completeRuns(data []byte) ([]predictor.Sample, []byte, error) {
	if i := bytes.LastIndexByte(data, '\n'); i+1 != len(data) {
		data = data[:i+1]
	}
	_, samples, err := predictor.ReadSamples(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	type step struct {
		run string
		rep int
	}
	count := map[step]int{}
	for _, s := range samples {
		count[step{s.Run, s.Rep}]++
	}
	var partial []step
	for st, n := range count {
		members, err := predictor.ParseRunKey(st.run)
		if err != nil {
			return nil, nil, err
		}
		if n != len(members) {
			partial = append(partial, st)
		}
	}
	if len(partial) == 0 {
		return samples, data, nil
	}
	// Rows are dropped by their run and repetition: the data lines,
	// after the comment lines and the column line, are the samples in
	// order.
	var kept []predictor.Sample
	var out strings.Builder
	k, header := 0, true
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "#") || header {
			header = header && strings.HasPrefix(l, "#")
			out.WriteString(l)
			continue
		}
		if k >= len(samples) {
			return nil, nil, fmt.Errorf("%d data lines for %d samples", k+1, len(samples))
		}
		if s := samples[k]; !slices.Contains(partial, step{s.Run, s.Rep}) {
			out.WriteString(l)
			kept = append(kept, s)
		}
		k++
	}
	return kept, []byte(out.String()), nil
}

// group is the processes of one run, being prepared.
type group struct {
	step  predictor.Step
	procs []*proc
	ready chan error
}

// proc is one workload process and its output lines.
type proc struct {
	member predictor.Member
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *tailBuffer
}

// prepare starts a run's processes and waits, in the background, for
// each to say it is ready.
func prepare(ctx context.Context, cfg Config, step predictor.Step) *group {
	g := &group{step: step, ready: make(chan error, 1)}
	go func() {
		for _, m := range step.Run {
			p, err := startProc(ctx, cfg, m)
			if err != nil {
				g.ready <- err
				return
			}
			g.procs = append(g.procs, p)
		}
		for _, p := range g.procs {
			if err := p.expect("ready", cfg.Timeout); err != nil {
				g.ready <- err
				return
			}
		}
		g.ready <- nil
	}()
	return g
}

func startProc(ctx context.Context, cfg Config, m predictor.Member) (*proc, error) {
	cmd := exec.CommandContext(ctx, cfg.Python, cfg.Script, "--job", m.Job, "--wait-go",
		"--warmup", fmt.Sprint(cfg.Warmup.Seconds()), "--seconds", fmt.Sprint(cfg.Measure.Seconds()))
	cmd.Env = append(os.Environ(), cfg.ClientEnv(m)...)
	// Its own process group, killed whole: a helper process of the
	// workload must not keep the run (or its output pipes) alive.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Job, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Job, err)
	}
	p := &proc{member: m, cmd: cmd, stdin: stdin, lines: make(chan string, 16), stderr: &tailBuffer{max: 2048}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", m.Job, cfg.Python, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p, nil
}

// expect waits for a line starting with prefix and returns it.
func (p *proc) expect(prefix string, timeout time.Duration) error {
	_, err := p.line(prefix, timeout)
	return err
}

func (p *proc) line(prefix string, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return "", fmt.Errorf("%s@%d exited before %q: %s", p.member.Job, p.member.Percent, prefix, p.stderr.String())
			}
			if strings.HasPrefix(l, prefix) {
				return l, nil
			}
		case <-t.C:
			return "", fmt.Errorf("%s@%d: no %q within %s", p.member.Job, p.member.Percent, prefix, timeout)
		}
	}
}

func (g *group) kill() {
	<-g.ready
	for _, p := range g.procs {
		p.stdin.Close()
		if p.cmd.Process != nil {
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
		p.cmd.Wait()
	}
}

// execute runs a prepared group: go, measure the GPU while every process
// measures, collect the results.
func execute(ctx context.Context, cfg Config, g *group, utils map[string]predictor.Util) ([]predictor.Sample, error) {
	if err := <-g.ready; err != nil {
		g.ready <- err
		g.kill()
		return nil, err
	}
	g.ready <- nil
	defer g.kill()
	if err := send(g, "go"); err != nil {
		return nil, err
	}
	// Every process warms up, then all measure the same window.
	for _, p := range g.procs {
		if err := p.expect("warm", cfg.Timeout); err != nil {
			return nil, err
		}
	}
	if err := send(g, "measure"); err != nil {
		return nil, err
	}
	for _, p := range g.procs {
		if err := p.expect("measuring", cfg.Timeout); err != nil {
			return nil, err
		}
	}
	if err := cfg.Meter.Start(); err != nil {
		return nil, err
	}
	select {
	case <-time.After(cfg.Measure):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	runUtil, merr := cfg.Meter.Stop()
	if merr != nil {
		return nil, merr
	}
	if err := send(g, "stop"); err != nil {
		return nil, err
	}
	results := make([]result, len(g.procs))
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, p := range g.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := p.line("{", cfg.Timeout)
			if err == nil {
				err = json.Unmarshal([]byte(l), &results[i])
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return samples(cfg, g.step, results, runUtil, utils)
}

// send writes a control line to every process of a group.
func send(g *group, line string) error {
	for _, p := range g.procs {
		if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
			return fmt.Errorf("%s: %w", p.member.Job, err)
		}
	}
	return nil
}

// samples turns a run's results into one sample per job. An alone run's
// GPU utilisation (its first repetition) becomes that job's features at
// that percentage.
func samples(cfg Config, step predictor.Step, results []result, runUtil predictor.Util, utils map[string]predictor.Util) ([]predictor.Sample, error) {
	run := step.Run
	key := run.Key()
	for i, m := range run {
		if r := results[i]; r.ItemsPerS <= 0 || r.IterMsP50 <= 0 || r.Batch < 1 || r.IterCV < 0 {
			return nil, fmt.Errorf("%s@%d: bad result %+v", m.Job, m.Percent, r)
		}
	}
	// alone is the key of a member's alone run: alone runs are at
	// priority 0 (alone, priority changes nothing).
	alone := func(m predictor.Member) string { return predictor.Run{{Job: m.Job, Percent: m.Percent}}.Key() }
	if len(run) == 1 && step.Rep == 0 {
		utils[alone(run[0])] = runUtil // a valid alone run gives the job's features
	}
	var out []predictor.Sample
	for i, m := range run {
		r := results[i]
		jobUtil, ok := utils[alone(predictor.Member{Job: m.Job, Percent: 100})]
		if !ok {
			return nil, fmt.Errorf("%s: no alone run at 100 %% yet (its features)", m.Job)
		}
		s := predictor.Sample{
			Run: key, Job: m.Job, Kind: predictor.KindOf(m.Job), Batch: r.Batch, MPSPercent: m.Percent, SMs: cfg.SMs,
			CoRunners: len(run) - 1, JobUtil: jobUtil, ItemsPerS: r.ItemsPerS, IterMs: r.IterMsP50, RunUtil: runUtil,
			Extended: true, Rep: step.Rep, MPSPriority: m.Priority, IterCV: r.IterCV,
		}
		for j, c := range run {
			if j == i {
				continue
			}
			u, ok := utils[alone(c)]
			if !ok {
				return nil, fmt.Errorf("%s: no alone run at %d %% (co-runner features)", c.Job, c.Percent)
			}
			s.AddCoRunner(u, c.Percent, c.Priority, m.Priority)
		}
		out = append(out, s)
	}
	return out, nil
}

// tailBuffer keeps the last bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
