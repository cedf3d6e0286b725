package jobs

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Stop stops a job: it writes the stop record and signals the job's shim
// (SIGUSR1), which sends SIGTERM to the job's process group at once and
// SIGKILL when grace (0: the Runner's StopGrace) has passed and the job's
// process has not ended. Stop returns as soon as the shim is told; learn
// of the end with Wait. Because the shim keeps the time, the SIGKILL comes
// even if mmkd dies meanwhile. Stopping again may shorten the grace, never
// lengthen it. A stop record that cannot be written (a full disk) does
// not keep the shim from being told: it then gives the job the Runner's
// StopGrace. A job that already ended is not an error. A job whose shim
// is gone is killed at once and the error wraps ErrSupervisorLost.
func (r *Runner) Stop(jobID string, grace time.Duration) error {
	if err := checkID("stop", jobID); err != nil {
		return err
	}
	if grace <= 0 {
		grace = r.o.StopGrace
	}
	dir := r.Dir(jobID)
	if _, ended, err := readRecord(dir, exitFile, parseExitRecord); err != nil || ended {
		if err != nil {
			return fmt.Errorf("stop job %s: %w", jobID, err)
		}
		return nil
	}
	rec, found, err := r.readPid(jobID)
	if err != nil {
		return fmt.Errorf("stop job %s: %w", jobID, err)
	}
	if !found {
		return fmt.Errorf("stop job %s: %w", jobID, ErrNotStarted)
	}
	if err := writeRecordWith(r.o.WriteRecord, dir, stopFile, stopRecord{Version: recordVersion, Grace: grace}); err != nil {
		// A full disk must not keep a job from stopping: the shim, told
		// anyway, finds no readable record and uses the grace it was
		// started with (the Runner's StopGrace).
		r.log.Warn("cannot write the stop record; telling the shim to stop the job with its start's grace", "job", jobID, "err", err)
	}
	told, err := rec.Shim.signal(unix.SIGUSR1)
	if err != nil {
		return fmt.Errorf("stop job %s: %w", jobID, err)
	}
	if told {
		r.log.Info("stopping job", "job", jobID, "pid", rec.Child.PID, "grace", grace)
		return nil
	}
	if _, ended, err := readRecord(dir, exitFile, parseExitRecord); err != nil || ended {
		if err != nil {
			return fmt.Errorf("stop job %s: %w", jobID, err)
		}
		return nil // it ended meanwhile
	}
	return fmt.Errorf("stop: %w", r.lost(jobID, rec))
}

// Remove deletes a job's directory: log, records and checkpoint. A job
// that has not ended is refused (ErrRunning). (A shim touches no file
// after its exit record.)
func (r *Runner) Remove(jobID string) error {
	if err := checkID("remove", jobID); err != nil {
		return err
	}
	dir := r.Dir(jobID)
	_, ended, err := readRecord(dir, exitFile, parseExitRecord)
	if err != nil {
		return fmt.Errorf("remove job %s: %w", jobID, err)
	}
	if !ended {
		rec, found, err := r.readPid(jobID)
		if err != nil && !errors.Is(err, ErrSupervisorLost) {
			return fmt.Errorf("remove job %s: %w", jobID, err)
		}
		if found {
			if up, err := rec.Shim.running(); err != nil {
				return fmt.Errorf("remove job %s: %w", jobID, err)
			} else if up {
				return fmt.Errorf("remove job %s: %w", jobID, ErrRunning)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove job %s: %w", jobID, err)
	}
	return nil
}
