package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mmkgpu/mmk/jobs"
	"github.com/mmkgpu/mmk/slo"
)

// submitFlags are the flags of `mmkctl submit`.
type submitFlags struct {
	online, offline  bool
	priority         int
	mpsPriority      int
	memory, name     string
	env              []string
	workdir          string
	workload         string
	taskKey, idemKey string
	slo              string
}

func newSubmitCommand(a *app) *cobra.Command {
	f := &submitFlags{}
	var server *serverFlags
	cmd := &cobra.Command{
		Use:   "submit [flags] -- CMD [ARGS...]",
		Short: "Submit a job to mmkd",
		Long: "Submits CMD as a job to mmkd, which places it on a GPU instance and an MPS share\n" +
			"and starts it. Offline (throughput) unless --online. Prints the job's id; -o json\n" +
			"prints {\"id\": ...}. With --idempotency-key, submitting again returns the same job.",
		Example: "  mmkctl submit --online --slo p99=25ms --memory 8GiB --workload bert:8:infer -- python3 serve.py\n" +
			"  mmkctl submit --name resnet --env EPOCHS=3 -o json -- python3 train.py --lr 0.1",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := f.spec(cmd, args)
			if err != nil {
				return err
			}
			c, err := server.client()
			if err != nil {
				return err
			}
			var header http.Header
			if f.idemKey != "" {
				header = http.Header{"Idempotency-Key": {f.idemKey}}
			}
			var j jobs.Job
			status, err := c.post(cmd.Context(), "/api/v1/jobs", spec, header, &j)
			var se *serverError
			if errors.As(err, &se) && se.Field == "workdir" && f.workdir == "" {
				return fmt.Errorf("%w (the current directory, where the job runs by default: give --workdir a directory on mmkd's machine)", err)
			}
			if err != nil {
				return err
			}
			p := a.printer(cmd)
			if p.json {
				return p.JSON(map[string]string{"id": j.ID})
			}
			if p.names {
				p.namesOf([]jobs.Job{j})
				return nil
			}
			if err := p.Table("", []string{"ID", "STATE", "NAME"}, [][]string{{j.ID, string(j.State), j.Spec.Name}}); err != nil {
				return err
			}
			if status == http.StatusOK {
				p.Line("(submitted before with idempotency key %q: the job it created)", f.idemKey)
			}
			return nil
		},
	}
	// Flags stop at CMD, so that its own flags are not taken for mmkctl's.
	cmd.Flags().SetInterspersed(false)
	fl := cmd.Flags()
	fl.BoolVar(&f.online, "online", false, "latency-critical job (inference serving)")
	fl.BoolVar(&f.offline, "offline", false, "throughput job (training, batch inference); the default")
	cmd.MarkFlagsMutuallyExclusive("online", "offline")
	fl.IntVar(&f.priority, "priority", 0, "kernel scheduler priority, 0 (highest) to 9 (default: 0 online, 5 offline)")
	fl.IntVar(&f.mpsPriority, "mps-priority", 0, "MPS client priority, 0 normal or 1 below normal (default: 0 online, 1 offline)")
	fl.StringVar(&f.memory, "memory", "", "GPU memory the job needs, e.g. 8GiB or 512MiB (default: mmkd's)")
	fl.StringVar(&f.name, "name", "", "name shown in lists (default: the command's base name)")
	fl.StringArrayVar(&f.env, "env", nil, "K=V added to the job's environment (repeatable)")
	fl.StringVar(&f.workdir, "workdir", "", "the job's working directory (default: the current directory; a relative one is taken from it)")
	fl.StringVar(&f.workload, "workload", "", "predictor hint MODEL:BATCH:MODE or MODEL:MODE, e.g. resnet50:32:train")
	fl.StringVar(&f.slo, "slo", "", "an online job's latency target: p99=25ms, or a multiple of its latency alone, p99=1.5x (default: mmkd's slo.default)")
	fl.StringVar(&f.taskKey, "task-key", "", "kernel profile key (default: from the workload, else the name)")
	fl.StringVar(&f.idemKey, "idempotency-key", "", "submitting again with the same key returns the same job")
	server = addServerFlags(cmd)
	a.addOutputFlag(cmd)
	return cmd
}

// spec builds the job spec of the flags and the command.
func (f *submitFlags) spec(cmd *cobra.Command, args []string) (jobs.Spec, error) {
	s := jobs.Spec{Name: f.name, Command: args, Kind: jobs.Offline, TaskKey: f.taskKey, SLO: f.slo}
	if f.online {
		s.Kind = jobs.Online
	}
	if f.slo != "" {
		if !f.online {
			return s, fmt.Errorf("flag --slo: only an online job has a latency target: add --online")
		}
		if _, err := slo.Parse(f.slo); err != nil {
			return s, fmt.Errorf("flag --slo: %w", err)
		}
	}
	if cmd.Flags().Changed("priority") {
		p := f.priority
		s.Priority = &p
	}
	if cmd.Flags().Changed("mps-priority") {
		p := f.mpsPriority
		s.MPSPriority = &p
	}
	if f.memory != "" {
		mib, err := jobs.ParseMiB(f.memory)
		if err != nil {
			return s, fmt.Errorf("flag --memory: %w", err)
		}
		s.MemoryMiB = mib
	}
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return s, fmt.Errorf("flag --env: %q is not K=V", kv)
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = v
	}
	// The job starts where it was submitted unless --workdir says
	// otherwise (issue 37, item 2).
	if f.workdir != "" {
		dir, err := filepath.Abs(f.workdir)
		if err != nil {
			return s, fmt.Errorf("flag --workdir: %w", err)
		}
		s.WorkDir = dir
	} else {
		dir, err := os.Getwd()
		if err != nil {
			return s, fmt.Errorf("the current directory, the job's by default (give --workdir): %w", err)
		}
		s.WorkDir = dir
	}
	if f.workload != "" {
		w, err := parseWorkload(f.workload)
		if err != nil {
			return s, fmt.Errorf("flag --workload: %w", err)
		}
		s.Workload = w
	}
	return s, nil
}

// parseWorkload reads MODEL:BATCH:MODE or MODEL:MODE.
func parseWorkload(s string) (*jobs.Workload, error) {
	parts := strings.Split(s, ":")
	switch len(parts) {
	case 2:
		return &jobs.Workload{Model: parts[0], Mode: parts[1]}, nil
	case 3:
		batch, err := strconv.Atoi(parts[1])
		if err != nil || batch < 1 {
			return nil, fmt.Errorf("%q: the batch size %q is not a positive integer", s, parts[1])
		}
		return &jobs.Workload{Model: parts[0], Batch: batch, Mode: parts[2]}, nil
	}
	return nil, fmt.Errorf("%q: want MODEL:BATCH:MODE or MODEL:MODE, e.g. resnet50:32:train", s)
}
