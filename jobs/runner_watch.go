package jobs

import (
	"context"
	"fmt"
	"time"
)

func procOf(rec pidRecord) Proc {
	return Proc{PID: rec.Child.PID, ShimPID: rec.Shim.PID, StartedAt: rec.StartedAt}
}

// Adopt finds a job again after a restart of mmkd. If the job ended (or
// never started) it returns its exit record. If its shim still runs (the
// same process: pid, start time and boot checked), it returns the job's
// Proc and a nil Exit: learn of its end with Wait. If the shim is gone
// without an exit record, it kills what is left of the job (if its
// process still exists) and returns an error wrapping ErrSupervisorLost.
// A job with no records is ErrNotStarted.
func (r *Runner) Adopt(jobID string) (Proc, *Exit, error) {
	if err := checkID("adopt", jobID); err != nil {
		return Proc{}, nil, err
	}
	dir := r.Dir(jobID)
	for attempt := 0; ; attempt++ {
		exit, ended, err := readRecord(dir, exitFile, parseExitRecord)
		if err != nil {
			return Proc{}, nil, fmt.Errorf("adopt job %s: %w", jobID, err)
		}
		rec, found, err := r.readPid(jobID)
		if err != nil {
			return Proc{}, nil, fmt.Errorf("adopt job %s: %w", jobID, err)
		}
		switch {
		case ended:
			return procOf(rec), &exit, nil
		case !found:
			return Proc{}, nil, fmt.Errorf("adopt job %s: %w", jobID, ErrNotStarted)
		}
		up, err := rec.Shim.running()
		if err != nil {
			return Proc{}, nil, fmt.Errorf("adopt job %s: %w", jobID, err)
		}
		if up {
			return procOf(rec), nil, nil
		}
		// The shim may have written its exit record and exited after the
		// first read: look once more before calling it lost.
		if attempt == 0 {
			continue
		}
		return Proc{}, nil, r.lost(jobID, rec)
	}
}

// lost kills what is left of a job whose shim is gone and returns the
// error that says so.
func (r *Runner) lost(jobID string, rec pidRecord) error {
	killed, err := rec.killRest(jobID)
	if err != nil {
		r.log.Warn("cannot kill a job left without its shim", "job", jobID, "pid", rec.Child.PID, "err", err)
	}
	r.log.Warn("job's shim is gone without an exit record", "job", jobID, "shim", rec.Shim.PID, "jobKilled", killed)
	return fmt.Errorf("%w: shim %d of job %s is gone and left no exit record", ErrSupervisorLost, rec.Shim.PID, jobID)
}

// Wait returns a channel that gets the job's Exit once the job ends and
// is then closed; it is closed without a value when ctx is cancelled. It
// works for jobs this Runner started and for adopted ones alike: it reads
// the exit record every 150 ms, or at once when a shim this Runner started
// is reaped. When the job's end cannot be known, the Exit has Code -1 and
// an Error that says why: "supervisor lost: ..." for a shim gone without
// an exit record (what is left of the job is then killed), or the
// failure to read the records.
func (r *Runner) Wait(ctx context.Context, jobID string) <-chan Exit {
	ch := make(chan Exit, 1)
	go func() {
		defer close(ch)
		e, err := r.wait(ctx, jobID)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			e = Exit{Code: -1, At: time.Now(), Error: err.Error()}
		}
		ch <- e
	}()
	return ch
}

// wait is Wait, blocking, with the reason the end is unknown as an
// error: ErrSupervisorLost, ErrNotStarted, ctx.Err() or a read failure.
func (r *Runner) wait(ctx context.Context, jobID string) (Exit, error) {
	if err := checkID("wait", jobID); err != nil {
		return Exit{}, err
	}
	dir := r.Dir(jobID)
	r.mu.Lock()
	reaped := r.reaped[jobID]
	r.mu.Unlock()
	tick := time.NewTicker(waitPoll)
	defer tick.Stop()
	var rec pidRecord
	haveRec, shimGone := false, false
	for {
		exit, ended, err := readRecord(dir, exitFile, parseExitRecord)
		if err != nil {
			return Exit{}, fmt.Errorf("wait for job %s: %w", jobID, err)
		}
		if ended {
			return exit, nil
		}
		if shimGone {
			return Exit{}, r.lost(jobID, rec)
		}
		if !haveRec {
			if rec, haveRec, err = r.readPid(jobID); err != nil {
				return Exit{}, fmt.Errorf("wait for job %s: %w", jobID, err)
			} else if !haveRec && rec.Shim.PID == 0 {
				return Exit{}, fmt.Errorf("wait for job %s: %w", jobID, ErrNotStarted)
			}
			// A shim without a record or a process is recording the
			// end: look at it until it did (haveRec stays false, so
			// that a lost record is looked for again).
		}
		up, err := rec.Shim.running()
		if err != nil {
			return Exit{}, fmt.Errorf("wait for job %s: %w", jobID, err)
		}
		if !up {
			shimGone = true // read the exit record once more first
			continue
		}
		select {
		case <-ctx.Done():
			return Exit{}, ctx.Err()
		case <-reaped:
			reaped = nil
		case <-tick.C:
		}
	}
}
