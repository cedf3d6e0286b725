package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/mmkgpu/mmk/jobs"
)

// verdict is what the verify child found in a store after mmkd ran on
// it.
type verdict struct {
	// Lost are the template's jobs the store does not hold; LostKeys
	// the idempotency keys that do not find their job (a retry would
	// make a new one).
	Lost     []string `json:"lost,omitempty"`
	LostKeys []string `json:"lostKeys,omitempty"`
	// Changed are jobs kept damaged: in a state their start does not
	// explain, of another spec, or with events that cannot be read (or
	// none), each with what changed.
	Changed []string `json:"changed,omitempty"`
	// SetAside counts the records the store holds set aside (what this
	// and earlier starts set aside).
	SetAside int `json:"setAside"`
}

// allowed are the states a job of the template may be in after mmkd
// started on the store: a running job has no shim (the sweep starts
// no process), so mmkd marks it failed; it stays running only if it
// were adopted.
func allowed(before jobs.State) []jobs.State {
	if before == jobs.Running {
		return []jobs.State{jobs.Running, jobs.Failed}
	}
	return []jobs.State{before}
}

// verifyMain is "storesweep verify STORE JOBS.json": it reads STORE as
// mmkd left it (bbolt, read-only; records read as mmkd reads them,
// jobs.DecodeRecord: the buckets jobs, events and
// idem; nothing mended on the way, so that the verdict is of what mmkd
// did) in a child of the sweep, so that a fault here is not taken for
// mmkd's, compares it with the template's jobs and writes a verdict as
// JSON on stdout.
func verifyMain(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: storesweep verify STORE JOBS.json")
	}
	data, err := os.ReadFile(args[1])
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	var want []expected
	if err := json.Unmarshal(data, &want); err != nil {
		return fmt.Errorf("verify: %s: %w", args[1], err)
	}
	db, err := bolt.Open(args[0], 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer db.Close()
	var v verdict
	err = db.View(func(tx *bolt.Tx) error {
		jobsB, idem, events := tx.Bucket([]byte("jobs")), tx.Bucket([]byte("idem")), tx.Bucket([]byte("events"))
		if jobsB == nil || idem == nil || events == nil {
			return errors.New("the store lacks its buckets")
		}
		if aside := tx.Bucket([]byte("set-aside")); aside != nil {
			v.SetAside = aside.Stats().KeyN
		}
		for _, w := range want {
			raw := jobsB.Get([]byte(w.ID))
			if raw == nil {
				v.Lost = append(v.Lost, w.ID)
			} else {
				var j jobs.Job
				switch err := jobs.DecodeRecord(raw, &j); {
				case err != nil:
					v.Changed = append(v.Changed, w.ID+": its record: "+err.Error())
				case !slices.Contains(allowed(w.State), j.State):
					v.Changed = append(v.Changed, fmt.Sprintf("%s: %s, was %s", w.ID, j.State, w.State))
				case !jobs.SameSpec(j.Spec, w.Spec):
					v.Changed = append(v.Changed, w.ID+": its spec differs")
				}
				prefix := []byte(w.ID + "/")
				c := events.Cursor()
				n := 0
				for k, ev := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, ev = c.Next() {
					var e jobs.Event
					if err := jobs.DecodeRecord(ev, &e); err != nil {
						v.Changed = append(v.Changed, w.ID+": an event: "+err.Error())
					}
					n++
				}
				if n == 0 {
					v.Changed = append(v.Changed, w.ID+": no events")
				}
			}
			// The idempotency bucket's key: the owner's uid, "/", the key
			// (jobs.idemKey).
			key := w.Key
			if w.Owner != nil {
				key = strconv.Itoa(w.Owner.UID) + "/" + w.Key
			}
			if string(idem.Get([]byte(key))) != w.ID {
				v.LostKeys = append(v.LostKeys, w.Key)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	return json.NewEncoder(os.Stdout).Encode(v)
}
