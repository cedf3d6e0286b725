package jobs

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mmk.db")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func newJob(id, idem string) Job {
	return Job{ID: id, Spec: validSpec(), State: Pending, IdempotencyKey: idem, CreatedAt: t0, UpdatedAt: t0}
}

// TestStoreLifecycle: a job created, moved through its states and read
// back after the store is closed and opened again, with every event.
func TestStoreLifecycle(t *testing.T) {
	s, path := openTemp(t)
	j, created, err := s.Create(newJob("0000000000000001", ""))
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	steps := []State{Placed, Running, Restarting, Placed, Running, Succeeded}
	for i, to := range steps {
		j, err = s.Transition(j.ID, to, t0.Add(time.Duration(i+1)*time.Second), "step", func(j *Job) { j.Restarts = i })
		if err != nil {
			t.Fatalf("%s: %v", to, err)
		}
	}
	if _, err := s.Transition(j.ID, Running, t0, "again", nil); !errors.As(err, new(*TransitionError)) {
		t.Fatalf("succeeded -> running: %v, want a TransitionError", err)
	}
	s.Close()
	s2, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Get(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != Succeeded || got.Restarts != len(steps)-1 || !got.UpdatedAt.Equal(t0.Add(6*time.Second)) {
		t.Errorf("after reopen: %+v", got)
	}
	evs, err := s2.Events(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != len(steps)+1 || evs[0].To != Pending || evs[0].From != "" || evs[3].From != Running || evs[3].To != Restarting {
		t.Errorf("events %+v", evs)
	}
	for i, e := range evs {
		if e.Seq != i+1 {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
	}
	if _, err := s2.Get("0000000000000002"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := s2.Events("0000000000000002"); !errors.Is(err, ErrNotFound) {
		t.Errorf("events of unknown id: %v", err)
	}
}

// TestIdempotency: concurrent submissions with one key create one job.
func TestIdempotency(t *testing.T) {
	s, _ := openTemp(t)
	var wg sync.WaitGroup
	ids := make([]string, 16)
	createdN := make([]bool, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, c, err := s.Create(newJob(fmt.Sprintf("%016d", i+1), "key-1"))
			if err != nil {
				t.Error(err)
				return
			}
			ids[i], createdN[i] = j.ID, c
		}()
	}
	wg.Wait()
	n := 0
	for i := range ids {
		if createdN[i] {
			n++
		}
		if ids[i] != ids[0] {
			t.Errorf("submission %d got job %s, first got %s", i, ids[i], ids[0])
		}
	}
	all, err := s.All()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || len(all) != 1 {
		t.Errorf("%d created, %d stored; want 1 and 1", n, len(all))
	}
}

// TestReconfigs: history is numbered and read newest first.
func TestReconfigs(t *testing.T) {
	s, _ := openTemp(t)
	for i := range 3 {
		if _, err := s.AddReconfig(Reconfig{Time: t0, GPU: i, Cause: "arrival"}); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := s.Reconfigs(2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Seq != 3 || rs[0].GPU != 2 || rs[1].Seq != 2 {
		t.Errorf("reconfigs %+v", rs)
	}
}

// TestSchema: a store of a newer schema is refused; a second opener of
// the same file is told it is locked.
func TestSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mmk.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keySchema, []byte(fmt.Sprint(SchemaVersion+1)))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(path); err == nil {
		t.Error("a store of a newer schema was opened")
	}
	_, p2 := openTemp(t)
	if _, err := OpenStore(p2); err == nil {
		t.Error("a locked store was opened twice")
	}
}

// BenchmarkCreate: durable submissions, each its own fsync unless
// concurrent ones share a batch.
func BenchmarkCreate(b *testing.B) {
	s, err := OpenStore(filepath.Join(b.TempDir(), "mmk.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var n uint64
	var mu sync.Mutex
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mu.Lock()
			n++
			id := encodeID(n, 0)
			mu.Unlock()
			if _, _, err := s.Create(newJob(id, "")); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestDelete: a finished job goes with its events and idempotency key (the
// key may then be used again); a running one is refused.
func TestDelete(t *testing.T) {
	s, _ := openTemp(t)
	done := newJob("0000000000000001", "key")
	run := newJob("0000000000000002", "")
	for _, j := range []Job{done, run} {
		if _, _, err := s.Create(j); err != nil {
			t.Fatal(err)
		}
	}
	for _, to := range []State{Placed, Running, Succeeded} {
		if _, err := s.Transition(done.ID, to, t0, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Transition(run.ID, Placed, t0, "", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(run.ID); err == nil {
		t.Error("a placed job was deleted")
	}
	if err := s.Delete(done.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(done.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted job: %v", err)
	}
	if _, err := s.Events(done.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("events of a deleted job: %v", err)
	}
	again, created, err := s.Create(newJob("0000000000000003", "key"))
	if err != nil || !created || again.ID != "0000000000000003" {
		t.Errorf("key of a deleted job: %v %v %v", again.ID, created, err)
	}
	evs, err := s.Events(run.ID)
	if err != nil || len(evs) != 2 {
		t.Errorf("the other job's events: %v %v", evs, err)
	}
}

// TestIdempotencyConflict: a key used again for a different spec is
// refused; the same spec gets the first job.
func TestIdempotencyConflict(t *testing.T) {
	s, _ := openTemp(t)
	first, _, err := s.Create(newJob("0000000000000001", "k"))
	if err != nil {
		t.Fatal(err)
	}
	other := newJob("0000000000000002", "k")
	other.Spec.Command = []string{"other"}
	if _, _, err := s.Create(other); !errors.Is(err, ErrIdempotencyConflict) {
		t.Errorf("another spec under the key: %v, want ErrIdempotencyConflict", err)
	}
	same, created, err := s.Create(newJob("0000000000000003", "k"))
	if err != nil || created || same.ID != first.ID {
		t.Errorf("the same spec again: %s %v %v; want %s, not created", same.ID, created, err, first.ID)
	}
}

// BenchmarkOpenStore: opening a store of 2,000 finished jobs (each with
// an idempotency key and four events), as mmkd does at every start: the
// strict read of every record (findBad), the keys mended (keysToMend).
// Restart to ready follows it (bench/killsweep, bench/restart).
func BenchmarkOpenStore(b *testing.B) {
	path := filepath.Join(b.TempDir(), "mmk.db")
	s, err := OpenStore(path)
	if err != nil {
		b.Fatal(err)
	}
	for n := range uint64(2000) {
		id := encodeID(n+1, 0)
		if _, _, err := s.Create(newJob(id, "key-"+id)); err != nil {
			b.Fatal(err)
		}
		for _, to := range []State{Placed, Running, Succeeded} {
			if _, err := s.Transition(id, to, t0, "", nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		s, err := OpenStore(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAllAfterOpen: the first All of a store opened takes the jobs its
// strict read decoded, unless anything was written since: then it reads
// them again (a job moved between the open and All is seen moved).
func TestAllAfterOpen(t *testing.T) {
	s, path := openTemp(t)
	for n := range uint64(3) {
		if _, _, err := s.Create(newJob(encodeID(n+1, 0), "")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, write := range []bool{false, true} {
		s, err := OpenStore(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.opened) != 3 {
			t.Fatalf("the open read %d jobs, want 3", len(s.opened))
		}
		want := Pending
		if write {
			if _, err := s.Transition(encodeID(2, 0), Cancelled, t0, "test", nil); err != nil {
				t.Fatal(err)
			}
			want = Cancelled
		}
		for pass := range 2 { // the second All reads the records
			all, err := s.All()
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 3 || all[1].ID != encodeID(2, 0) || all[1].State != want {
				t.Errorf("write %v, pass %d: %d jobs, the second %s %s, want %s", write, pass, len(all), all[1].ID, all[1].State, want)
			}
		}
		if s.opened != nil {
			t.Error("the jobs read at open are kept after All")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
