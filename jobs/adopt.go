package jobs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Adopting jobs from their directories. Each job's directory holds its
// record as mmkd placed it (job.json, written at each start), so that a
// store that was lost (deleted, truncated, restored from an older
// backup) does not turn running jobs into orphans that nothing watches,
// stops or reports: mmkd reads the record back, asks the shim how the
// job stands (Adopt) and writes the job into the store again
// (Store.Recover).

// JobIDs lists the jobs that have a directory under the root.
func (r *Runner) JobIDs() ([]string, error) {
	entries, err := os.ReadDir(r.o.Root)
	if err != nil {
		return nil, fmt.Errorf("job directories: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && ValidID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// Record reads the job's record from its directory (Launch.Record); found
// is false when it has none (a job started by an mmk that wrote none).
func (r *Runner) Record(jobID string) (j Job, found bool, err error) {
	if err := checkID("job record", jobID); err != nil {
		return Job{}, false, err
	}
	data, err := os.ReadFile(filepath.Join(r.Dir(jobID), jobFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Job{}, false, nil
	}
	if err != nil {
		return Job{}, false, fmt.Errorf("record of job %s: %w", jobID, err)
	}
	// A job started by an mmk before schema 2 has a record without a
	// checksum.
	if err := decodeRecord(data, &j, true); err != nil {
		return Job{}, false, fmt.Errorf("record of job %s: %w", jobID, err)
	}
	if j.ID != jobID || !j.State.Valid() {
		return Job{}, false, fmt.Errorf("record of job %s: it is of job %q in state %q", jobID, j.ID, j.State)
	}
	return j, true, nil
}

// StartedPID is the job's process as its shim recorded it (pid.json),
// without checking that it still runs and without acting on it: 0 when
// there is no readable record.
func (r *Runner) StartedPID(jobID string) int {
	if !ValidID(jobID) {
		return 0
	}
	rec, found, err := readRecord(r.Dir(jobID), pidFile, parsePidRecord)
	if err != nil || !found {
		return 0
	}
	return rec.Child.PID
}

// HasRun reports whether the job's directory holds the records of a run
// (a pid or an exit record).
func (r *Runner) HasRun(jobID string) bool {
	for _, name := range []string{pidFile, exitFile} {
		if _, err := os.Stat(filepath.Join(r.Dir(jobID), name)); err == nil {
			return true
		}
	}
	return false
}

// Recover writes j into the store as it is, replacing the store's record
// of it if any, with an event from the store's state (none for a job the
// store lacked) to j's, at now, for reason: a job adopted from its
// directory after the store was lost or restored from an older backup.
func (s *Store) Recover(j Job, now time.Time, reason string) error {
	if !ValidID(j.ID) || !j.State.Valid() {
		return fmt.Errorf("job store: recover job %q in state %q: not a job", j.ID, j.State)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		var from State
		var old Job
		if err := get(tx, j.ID, &old); err == nil {
			from = old.State
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		j.Reason, j.UpdatedAt = reason, now
		if err := put(tx.Bucket(bucketJobs), j); err != nil {
			return err
		}
		if k := idemKey(j); k != "" && tx.Bucket(bucketIdem).Get([]byte(k)) == nil {
			if err := tx.Bucket(bucketIdem).Put([]byte(k), []byte(j.ID)); err != nil {
				return err
			}
		}
		return putEvent(tx, j.ID, Event{Time: now, From: from, To: j.State, Reason: reason})
	})
	if err != nil {
		return fmt.Errorf("job store: recover job %s: %w", j.ID, err)
	}
	return nil
}
