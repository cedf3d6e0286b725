package main

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/mmkgpu/mmk/jobs"
)

// TestJobID: the template's ids are jobs.NewID's: valid, the time in
// their first characters, in creation order.
func TestJobID(t *testing.T) {
	at := base.Add(90 * time.Minute)
	id := jobID(at, 0xdeadbeef)
	if !jobs.ValidID(id) {
		t.Fatalf("%q is not a job id", id)
	}
	if got, want := id[:9], jobs.NewID(at)[:9]; got != want {
		t.Errorf("id %s: time characters %s, NewID's %s", id, got, want)
	}
	if next := jobID(at.Add(time.Second), 0); next <= id {
		t.Errorf("a later job's id %s sorts before %s", next, id)
	}
}

// TestTemplate: the committed template holds at least 1 MiB of pages
// with running, queued and ended jobs, each with its idempotency key,
// and its backup beside it holds the same jobs.
func TestTemplate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mmk.db")
	_, want, err := loadTemplate("testdata/store.db.gz", path)
	if err != nil {
		t.Fatal(err)
	}
	if used, err := usedBytes(path); err != nil || used < minStore {
		t.Errorf("the template uses %d bytes (%v), want 1 MiB or more", used, err)
	}
	states := map[jobs.State]int{}
	for _, w := range want {
		states[w.State]++
		if w.Key == "" || w.Owner == nil {
			t.Errorf("job %s has no idempotency key or owner", w.ID)
		}
	}
	if states[jobs.Running] == 0 || states[jobs.Pending] == 0 || states[jobs.Succeeded] == 0 {
		t.Errorf("the template's jobs by state: %v", states)
	}
	s, err := jobs.OpenStore(path + jobs.BackupSuffix)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if all, err := s.All(); err != nil || len(all) != len(want) {
		t.Errorf("the backup holds %d jobs (%v), the store %d", len(all), err, len(want))
	}
}

// TestFlip: the same seed flips the same bytes, within the used pages.
func TestFlip(t *testing.T) {
	data := make([]byte, 64<<10)
	a, _ := flip(data, 16<<10, 8, 26)
	b, _ := flip(data, 16<<10, 8, 26)
	if !bytes.Equal(a, b) {
		t.Error("seed 26 flipped different bytes twice")
	}
	n := 0
	for i, c := range a {
		if c != 0 {
			n++
			if i >= 16<<10 {
				t.Errorf("byte %d flipped, past the used 16 KiB", i)
			}
		}
	}
	if n == 0 || n > 8 {
		t.Errorf("%d bytes changed by 8 flips", n)
	}
}
