package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/jobs"
)

// hugeMiB is the memory of the sweep's queued jobs: more than any fake
// GPU holds, so that mmkd leaves them queued (it does not start a
// process for them) and their state can be compared after a start.
const hugeMiB = 4 << 20

// expected is a job of the template store as the sweep compares it.
type expected struct {
	ID    string     `json:"id"`
	State jobs.State `json:"state"`
	// Key is its idempotency key, Spec and Owner what a retry sends.
	Key   string      `json:"key"`
	Spec  jobs.Spec   `json:"spec"`
	Owner *jobs.Owner `json:"owner"`
}

// buildStore writes the template store at path with n jobs made by
// mmkd's own store code (jobs.Store.Create and Transition, as the API
// and the placement loop call them): a fifth running (placed, then
// started, with a pid), a tenth ended, the rest queued, each with an
// idempotency key, an owner, an environment and a few events; then
// reconfigurations. It returns the jobs. bbolt's layout of the same
// writes varies from run to run (the slack of its pages comes from
// reused buffers), so the sweep damages a template built once and
// committed (-template; -rebuild writes it).
func buildStore(path string, n int) ([]expected, error) {
	s, err := jobs.OpenStore(path)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	now := base
	ids := rand.New(rand.NewPCG(38, 1))
	owner := jobs.Owner{UID: 1000 + 0, GID: 1000, Name: "alice"}
	var out []expected
	for i := range n {
		at := now.Add(time.Duration(i) * time.Second)
		o := owner
		o.UID += i % 3
		spec := jobs.Spec{
			Name:    fmt.Sprintf("train-%04d", i),
			Command: []string{"python3", "train.py", "--epochs", fmt.Sprint(10 + i%7), "--lr", "0.001", "--data", fmt.Sprintf("/datasets/imagenet/shard-%03d", i%128)},
			Env: map[string]string{
				"WANDB_PROJECT": "sweep", "HF_HOME": "/scratch/hf", "OMP_NUM_THREADS": "4",
				"RUN_TAG": fmt.Sprintf("run-%d-%s", i, strings.Repeat("x", i%40)),
			},
			WorkDir:   "/home/alice/project",
			Kind:      jobs.Offline,
			MemoryMiB: hugeMiB,
			Workload:  &jobs.Workload{Model: "resnet50", Batch: 32, Mode: "train"},
		}
		state := jobs.Pending
		switch {
		case i%5 == 1:
			state = jobs.Running
			spec.MemoryMiB = 8192
		case i%10 == 3:
			state = jobs.Succeeded
			spec.MemoryMiB = 8192
		}
		j := jobs.Job{ID: jobID(at, ids.Uint32()), Spec: spec, Priority: 5, MemoryMiB: spec.MemoryMiB, TaskKey: "resnet50_train",
			State: jobs.Pending, Owner: &o, IdempotencyKey: fmt.Sprintf("sweep-%d", i), CreatedAt: at, UpdatedAt: at}
		if _, _, err := s.Create(j); err != nil {
			return nil, err
		}
		if state != jobs.Pending {
			p := &jobs.Placement{GPU: i % 3, GPUUUID: fmt.Sprintf("GPU-fake-%d", i%3), InstanceKey: fmt.Sprintf("gpu%d", i%3),
				Device: fmt.Sprintf("GPU-fake-%d", i%3), MPSPercent: 50, Speed: 0.7}
			if _, err := s.Transition(j.ID, jobs.Placed, at, "", func(j *jobs.Job) { j.Placement = p }); err != nil {
				return nil, err
			}
			// A pid no process has: mmkd finds no shim for the job.
			if _, err := s.Transition(j.ID, jobs.Running, at, "", func(j *jobs.Job) { j.PID, j.ShimPID, j.StartedAt = 1<<22-i, 1<<22-i-1, at }); err != nil {
				return nil, err
			}
		}
		if state == jobs.Succeeded {
			code := 0
			end := at.Add(time.Minute)
			if _, err := s.Transition(j.ID, jobs.Succeeded, end, "", func(j *jobs.Job) { j.ExitCode, j.FinishedAt, j.PID = &code, end, 0 }); err != nil {
				return nil, err
			}
		}
		out = append(out, expected{ID: j.ID, State: state, Key: j.IdempotencyKey, Spec: spec, Owner: &o})
	}
	for i := range n / 10 {
		if _, err := s.AddReconfig(jobs.Reconfig{Time: now, GPU: i % 3, Cause: "arrival of job " + out[i].ID, From: "whole", To: "whole",
			Started: []string{out[i].ID}, Gain: 0.1, Duration: time.Millisecond}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// writeTemplate builds a template store of n jobs and writes it to
// gz, gzipped.
func writeTemplate(gz string, n int) error {
	tmp, err := os.MkdirTemp("", "mmk-storesweep-build-")
	if err != nil {
		return fmt.Errorf("build the template: %w", err)
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "mmk.db")
	if _, err := buildStore(path, n); err != nil {
		return fmt.Errorf("build the template: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("build the template: %w", err)
	}
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("build the template: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("build the template: %w", err)
	}
	if err := os.WriteFile(gz, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("build the template: %w", err)
	}
	return nil
}

// loadTemplate writes the gzipped template gz to path, 0600, with its
// backup beside it made as mmkd makes one (a read transaction's WriteTo,
// jobs.Store.Backup: taken last, it holds every job), and returns the
// store's bytes and its jobs (read with mmkd's store code from a copy).
func loadTemplate(gz, path string) ([]byte, []expected, error) {
	f, err := os.Open(gz)
	if err != nil {
		return nil, nil, fmt.Errorf("the template: %w", err)
	}
	defer f.Close()
	r, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("the template %s: %w", gz, err)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("the template %s: %w", gz, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("the template: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, nil, fmt.Errorf("the template: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return nil, nil, fmt.Errorf("the template: %w", err)
	}
	err = atomicfile.WriteFunc(path+jobs.BackupSuffix, 0o600, func(w io.Writer) error {
		return db.View(func(tx *bolt.Tx) error {
			_, err := tx.WriteTo(w)
			return err
		})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the template's backup: %w", err)
	}
	probe := path + ".read"
	if err := os.WriteFile(probe, data, 0o600); err != nil {
		return nil, nil, fmt.Errorf("the template: %w", err)
	}
	defer os.Remove(probe)
	s, err := jobs.OpenStore(probe)
	if err != nil {
		return nil, nil, fmt.Errorf("the template: %w", err)
	}
	defer s.Close()
	all, err := s.All()
	if err != nil {
		return nil, nil, fmt.Errorf("the template: %w", err)
	}
	want := make([]expected, len(all))
	for i, j := range all {
		want[i] = expected{ID: j.ID, State: j.State, Key: j.IdempotencyKey, Spec: j.Spec, Owner: j.Owner}
	}
	return data, want, nil
}

// base is the time of the template's first job: fixed, so that the
// template is the same file at every run (mmkd runs with a retention of
// 0, keeping the ended jobs).
var base = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// idAlphabet is jobs.NewID's: Crockford's base32 in lower case.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// jobID is a job id as jobs.NewID makes one (48 bits of milliseconds, 32
// random), its random bits given: the template's ids are the same at
// every run.
func jobID(at time.Time, random uint32) string {
	ms := uint64(at.UnixMilli()) & (1<<48 - 1)
	hi, lo := ms>>32, ms<<32|uint64(random) // the 80 bits
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = idAlphabet[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(b[:])
}

// usedBytes is the length of the pages the store at path uses (bbolt
// grows its file ahead of them).
func usedBytes(path string) (int, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("the template store: %w", err)
	}
	defer db.Close()
	var n int64
	err = db.View(func(tx *bolt.Tx) error { n = tx.Size(); return nil })
	return int(n), err
}

// copyFile copies src to dst, 0600.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", filepath.Base(src), err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		return fmt.Errorf("copy %s: %w", filepath.Base(src), err)
	}
	return nil
}
