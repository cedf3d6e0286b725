package jobs

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// damagedRecords makes the store of TestDamagedRecordsPutBack: jobs 1-10
// with idempotency keys, a backup, then newer changes (job 1 placed, job
// 11 created), then damage that bbolt's check cannot see: job 2's record
// not JSON, job 3's under a key that is not its id, job 4's key gone
// from the idempotency bucket and job 5's naming job 9, job 6's first
// event and the first reconfiguration not JSON.
func damagedRecords(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mmk.db")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 10; i++ {
		if _, _, err := s.Create(newJob(fmt.Sprintf("%016d", i), fmt.Sprintf("key-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AddReconfig(Reconfig{GPU: 0, Cause: "arrival"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Backup(path + BackupSuffix); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(fmt.Sprintf("%016d", 1), Placed, t0, "placed", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(newJob(fmt.Sprintf("%016d", 11), "key-11")); err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		jobs, idem := tx.Bucket(bucketJobs), tx.Bucket(bucketIdem)
		if err := jobs.Put([]byte(fmt.Sprintf("%016d", 2)), []byte(`{"id":"0000000000000002","stat`)); err != nil {
			return err
		}
		three := []byte(fmt.Sprintf("%016d", 3))
		v := append([]byte(nil), jobs.Get(three)...)
		if err := jobs.Delete(three); err != nil {
			return err
		}
		if err := jobs.Put([]byte("0000000000000z03"), v); err != nil {
			return err
		}
		if err := idem.Delete([]byte("key-4")); err != nil {
			return err
		}
		if err := idem.Put([]byte("key-5"), []byte(fmt.Sprintf("%016d", 9))); err != nil {
			return err
		}
		if err := tx.Bucket(bucketEvents).Put(append([]byte(fmt.Sprintf("%016d/", 6)), seqKey(1)...), []byte("{bad")); err != nil {
			return err
		}
		return tx.Bucket(bucketReconfig).Put(seqKey(1), []byte("nope"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDamagedRecordsPutBack (issue 38, the corruption sweep): records
// that a byte flip damaged without breaking bbolt's structure are set
// aside and put back from the backup (OpenOptions.Backup): the jobs the
// store lacks with their events, and the events and reconfigurations
// set aside; what the store holds newer than the backup stays (job 1
// placed, job 11). Every job's idempotency key finds it again (mended
// from the job records). Before, jobs 2 and 3 were lost (set aside),
// the retries of keys 4 and 5 made new jobs or failed, job 6's events
// and the reconfigurations could not be read.
func TestDamagedRecordsPutBack(t *testing.T) {
	path := damagedRecords(t)
	s, err := OpenStoreWith(path, OpenOptions{Backup: path + BackupSuffix})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all, err := s.All()
	if err != nil || len(all) != 11 {
		t.Fatalf("the store holds %d jobs (%v), want 11", len(all), err)
	}
	if j, err := s.Get(fmt.Sprintf("%016d", 1)); err != nil || j.State != Placed {
		t.Errorf("job 1, placed after the backup: %s %v", j.State, err)
	}
	for i := 1; i <= 11; i++ {
		id := fmt.Sprintf("%016d", i)
		retry := newJob("zzzzzzzzzzzzzzzz", fmt.Sprintf("key-%d", i))
		got, created, err := s.Create(retry)
		if err != nil || created || got.ID != id {
			t.Errorf("retry of key-%d: job %s, created %v, %v; want job %s", i, got.ID, created, err, id)
		}
		if ev, err := s.Events(id); err != nil || len(ev) == 0 {
			t.Errorf("job %s: events %v, %v", id, ev, err)
		}
	}
	if r, err := s.Reconfigs(0); err != nil || len(r) != 1 {
		t.Errorf("reconfigurations %v, %v", r, err)
	}
	if len(s.SetAside()) != 4 {
		t.Errorf("set aside %+v, want 4 records", s.SetAside())
	}
	if pb := s.PutBack(); len(pb) != 4 {
		t.Errorf("put back %v, want jobs 2 and 3, job 6's event and a reconfiguration", pb)
	}
	if k := s.KeysMended(); len(k) != 2 {
		t.Errorf("keys mended %v, want key-4 and key-5", k)
	}
}

// TestDamagedRecordsWithoutBackup: without a backup the damaged records
// stay set aside (the store opens with the others) and the keys are
// still mended from the job records.
func TestDamagedRecordsWithoutBackup(t *testing.T) {
	path := damagedRecords(t)
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if all, err := s.All(); err != nil || len(all) != 9 {
		t.Errorf("the store holds %d jobs (%v), want 9", len(all), err)
	}
	if len(s.PutBack()) != 0 || len(s.KeysMended()) != 2 {
		t.Errorf("put back %v, keys mended %v", s.PutBack(), s.KeysMended())
	}
}

// TestFindBadKeepsTheOthers: the strict read's jobs (Store.opened) are
// those that can be served, in the store's order, each whole: the
// damaged store's jobs 2 (not JSON) and 3 (under another key) are left
// out, the nine others kept as their records say (job 1 placed). The
// jobs are kept in the slice they were read into, the damaged ones
// closed over (findBad), so a slip there would shift or repeat a job.
func TestFindBadKeepsTheOthers(t *testing.T) {
	path := damagedRecords(t)
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := &Store{db: db}
	bad, err := s.findBad(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 4 {
		t.Errorf("%d records cannot be served (%v), want 4: jobs 2 and 3, an event, a reconfiguration", len(bad), bad)
	}
	var ids []string
	for _, j := range s.opened {
		ids = append(ids, strings.TrimLeft(j.ID, "0"))
		if want := fmt.Sprintf("key-%s", strings.TrimLeft(j.ID, "0")); j.IdempotencyKey != want {
			t.Errorf("job %s holds key %q, want %q", j.ID, j.IdempotencyKey, want)
		}
	}
	if got, want := strings.Join(ids, ","), "1,4,5,6,7,8,9,10,11"; got != want {
		t.Errorf("jobs kept %s, want %s", got, want)
	}
	if len(s.opened) > 0 && s.opened[0].State != Placed {
		t.Errorf("job 1 %s, want placed", s.opened[0].State)
	}
}
