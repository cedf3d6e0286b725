package jobs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the store layout this mmk writes. Version 1: buckets
// meta, jobs (id -> Job JSON), events (id/seq -> Event JSON), idem
// (idempotency key -> id), reconfigs (seq -> Reconfig JSON). Version 2:
// the same, each record followed by its checksum line (EncodeRecord) and
// read strictly; a store of version 1 is rewritten so when opened.
const SchemaVersion = 2

var (
	bucketMeta     = []byte("meta")
	bucketJobs     = []byte("jobs")
	bucketEvents   = []byte("events")
	bucketIdem     = []byte("idem")
	bucketReconfig = []byte("reconfigs")
	keySchema      = []byte("schema")
	// allBuckets are the buckets a store has from its first open.
	allBuckets = [][]byte{bucketMeta, bucketJobs, bucketEvents, bucketIdem, bucketReconfig}
)

// batchDelay is bbolt's MaxBatchDelay for Create (its default is 10 ms).
const batchDelay = 500 * time.Microsecond

// ErrNotFound is a job id the store does not hold.
var ErrNotFound = errors.New("no such job")

// ErrIdempotencyConflict is an idempotency key used before for a job of
// another spec: a retry must repeat the request it retries.
var ErrIdempotencyConflict = errors.New("idempotency key was used for a different job")

// Event is one transition of a job, as the store recorded it.
type Event struct {
	Seq    int       `json:"seq"`
	Time   time.Time `json:"time"`
	From   State     `json:"from,omitempty"`
	To     State     `json:"to"`
	Reason string    `json:"reason,omitempty"`
}

// Reconfig is one change of a GPU's layout or MPS shares: what the
// placement loop decided and what it cost.
type Reconfig struct {
	Seq  int       `json:"seq"`
	Time time.Time `json:"time"`
	GPU  int       `json:"gpu"`
	// Cause is what triggered the decision ("arrival of job X").
	Cause string `json:"cause"`
	// From and To are the GPU's layouts (canonical text; "whole" for a
	// GPU without MIG).
	From string `json:"from"`
	To   string `json:"to"`
	// Steps are the MIG operations applied (none when only MPS shares or
	// placements changed).
	Steps []string `json:"steps,omitempty"`
	// Restarted are the jobs it stopped and started again, Started the
	// pending jobs it placed.
	Restarted []string `json:"restarted,omitempty"`
	Started   []string `json:"started,omitempty"`
	// Gain is the predicted rise of the GPU's total speed.
	Gain float64 `json:"gain"`
	// Duration is how long applying it took; Error why it failed, if it did.
	Duration time.Duration `json:"durationNs"`
	Error    string        `json:"error,omitempty"`
}

// Store is the durable job store. It is safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
	// setAside are the records OpenStore could not read and moved out of
	// their buckets (SetAside); putBack what it put back from the backup
	// (PutBack), or why it could not (putBackErr); keysMended the
	// idempotency keys it put again (KeysMended).
	setAside   []SetAsideRecord
	putBack    []string
	putBackErr error
	keysMended []string
	// opened are the jobs the strict read at open decoded, in id order,
	// as of the store's transaction openedTx: the first All of a store
	// nothing wrote to since takes them instead of reading every record
	// again (mmkd's start reads its whole history once).
	openedMu sync.Mutex
	opened   []Job
	openedTx int
}

// OpenStore opens (creating it if needed) the store at path. A store of
// a newer schema than this mmk writes is refused, and so is a damaged one
// (ErrStoreDamaged: see openChecked). A record that cannot be read is
// set aside, not served (SetAside lists them), and the idempotency keys
// that do not find their job are put again (KeysMended). It checks the
// store in this process: mmkd uses OpenStoreWith and a child process.
func OpenStore(path string) (*Store, error) { return OpenStoreWith(path, OpenOptions{}) }

// OpenStoreWith is OpenStore with the store's check run as o says, and,
// once records were set aside, what damage took put back from the
// backup o.Backup (putBackFrom; a backup that cannot be read is
// PutBackError, and the store opens without). With a child's check, the
// records are read while the child makes its trial write, once it has
// found the structure whole; nothing is written before its verdict. A
// panic or fault of bbolt's in reading the records or in the first
// writes (the buckets, the schema, setting records aside) is
// ErrStoreDamaged too, not a crash.
func OpenStoreWith(path string, o OpenOptions) (s *Store, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("job store: %w", err)
	}
	db, verdict, err := openChecking(path, &o, false)
	if err != nil {
		return nil, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db.Close()
			s, err = nil, fmt.Errorf("job store %s: %w: reading it or its first write panicked: %v", path, ErrStoreDamaged, r)
		}
	}()
	// Create's batches wait at most this long for company: long enough
	// for a burst of concurrent submissions to share one commit, short
	// next to a commit's two fsyncs on a slow disk.
	db.MaxBatchDelay = batchDelay
	// The records are read while the check's child makes its trial
	// write (its structure is whole: the pages may be read); nothing is
	// written before the child's verdict.
	s = &Store{db: db, path: path}
	schema, fresh, whole, err := readSchema(db)
	var bad []SetAsideRecord
	if err == nil {
		bad, err = s.findBad(schema < 2)
	}
	// The keys are checked before the verdict as well (they are only
	// read) where nothing read will change: no record to set aside or
	// rewrite, no bucket to make.
	var mend [][2]string
	keysRead := err == nil && len(bad) == 0 && schema >= 2 && !fresh && whole
	if keysRead {
		if mend, err = s.keysToMend(); err != nil {
			err = fmt.Errorf("idempotency keys: %w", err)
		}
	}
	if o.afterRead != nil {
		o.afterRead()
	}
	if verr := verdict(); verr != nil {
		// Damage explains a record or a schema that cannot be read.
		db.Close()
		return nil, verr
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("job store %s: %w", path, err)
	}
	if fresh || !whole {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, b := range allBuckets {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			if fresh {
				return tx.Bucket(bucketMeta).Put(keySchema, []byte(strconv.Itoa(SchemaVersion)))
			}
			return nil
		})
	}
	if err == nil {
		err = s.setAsideRecords(bad)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("job store %s: %w", path, err)
	}
	if len(s.setAside) > 0 && o.Backup != "" {
		s.putBackErr = s.putBackFrom(o.Backup, &o)
	}
	if schema < 2 {
		if err := s.addChecksums(); err != nil {
			db.Close()
			return nil, fmt.Errorf("job store %s: schema 2: %w", path, err)
		}
	}
	if len(s.setAside) > 0 || schema < 2 {
		// Records were put back or rewritten after the strict read.
		s.opened = nil
	}
	if !keysRead {
		mend, err = s.keysToMend()
	}
	if err == nil {
		err = s.putKeys(mend)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("job store %s: idempotency keys: %w", path, err)
	}
	if err := db.View(func(tx *bolt.Tx) error { s.openedTx = tx.ID(); return nil }); err != nil {
		db.Close()
		return nil, fmt.Errorf("job store %s: %w", path, err)
	}
	return s, nil
}

// readSchema is the store's schema version; fresh is a store that has
// none yet (new: SchemaVersion is written), whole one that has every
// bucket (nothing to write at open).
func readSchema(db *bolt.DB) (schema int, fresh, whole bool, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		whole = true
		for _, b := range allBuckets {
			whole = whole && tx.Bucket(b) != nil
		}
		var v []byte
		if meta := tx.Bucket(bucketMeta); meta != nil {
			v = meta.Get(keySchema)
		}
		if v == nil {
			schema, fresh = SchemaVersion, true
			return nil
		}
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return fmt.Errorf("schema version %q is not a number", v)
		}
		if n > SchemaVersion {
			return fmt.Errorf("schema version %d is newer than this mmk's %d: use a newer mmkd", n, SchemaVersion)
		}
		schema = n
		return nil
	})
	return schema, fresh, whole, err
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Create stores a new job in its first state with its first event. With
// an idempotency key already used, it returns the job created then and
// false, and stores nothing. Concurrent calls share fsyncs (bolt Batch).
func (s *Store) Create(j Job) (Job, bool, error) {
	if !j.State.Valid() {
		return Job{}, false, fmt.Errorf("job %s: state %q", j.ID, j.State)
	}
	var out Job
	created := false
	err := s.db.Batch(func(tx *bolt.Tx) error {
		created = false
		if k := idemKey(j); k != "" {
			if id := tx.Bucket(bucketIdem).Get([]byte(k)); id != nil {
				created = false
				if err := get(tx, string(id), &out); err != nil {
					return err
				}
				if !SameSpec(out.Spec, j.Spec) {
					return fmt.Errorf("key %q (job %s): %w", k, out.ID, ErrIdempotencyConflict)
				}
				return nil
			}
		}
		jobs := tx.Bucket(bucketJobs)
		if jobs.Get([]byte(j.ID)) != nil {
			return fmt.Errorf("job %s exists", j.ID)
		}
		if err := put(jobs, j); err != nil {
			return err
		}
		if err := putEvent(tx, j.ID, Event{Time: j.CreatedAt, To: j.State, Reason: "submitted"}); err != nil {
			return err
		}
		if k := idemKey(j); k != "" {
			if err := tx.Bucket(bucketIdem).Put([]byte(k), []byte(j.ID)); err != nil {
				return err
			}
		}
		out, created = j, true
		return nil
	})
	if err != nil {
		return Job{}, false, fmt.Errorf("job store: create: %w", err)
	}
	return out, created, nil
}

// idemKey is the idempotency bucket's key of a job's idempotency key:
// each owner has keys of its own, so that a key another user chose never
// returns that user's job.
func idemKey(j Job) string {
	if j.IdempotencyKey == "" || j.Owner == nil {
		return j.IdempotencyKey
	}
	return string(appendIdemKey(nil, &j))
}

// appendIdemKey appends idemKey(*j) to dst.
func appendIdemKey(dst []byte, j *Job) []byte {
	if j.IdempotencyKey != "" && j.Owner != nil {
		dst = strconv.AppendInt(dst, int64(j.Owner.UID), 10)
		dst = append(dst, '/')
	}
	return append(dst, j.IdempotencyKey...)
}

// SameSpec reports two specs that ask for the same job.
func SameSpec(a, b Spec) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// Get returns a job; ErrNotFound if there is none of that id.
func (s *Store) Get(id string) (Job, error) {
	var j Job
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx, id, &j) })
	return j, err
}

// All returns every job in id order (creation order). Records that
// cannot be read were set aside when the store was opened.
func (s *Store) All() ([]Job, error) {
	var out []Job
	err := s.db.View(func(tx *bolt.Tx) error {
		s.openedMu.Lock()
		opened, same := s.opened, s.opened != nil && tx.ID() == s.openedTx
		s.opened = nil
		s.openedMu.Unlock()
		if same {
			out = opened
			return nil
		}
		return tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
			var j Job
			if err := loadRecord(v, &j); err != nil {
				return fmt.Errorf("job %s: %w", k, err)
			}
			out = append(out, j)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("job store: %w", err)
	}
	return out, nil
}

// Transition moves a job to state to at now, after fn (if set) updated
// its other fields, and records the event; both are written in one
// commit. A move the state machine forbids is a *TransitionError and
// changes nothing.
func (s *Store) Transition(id string, to State, now time.Time, reason string, fn func(*Job)) (Job, error) {
	var out Job
	err := s.db.Update(func(tx *bolt.Tx) error {
		var j Job
		if err := get(tx, id, &j); err != nil {
			return err
		}
		if !j.State.CanMove(to) {
			return &TransitionError{ID: id, From: j.State, To: to}
		}
		from := j.State
		if fn != nil {
			fn(&j)
		}
		j.State, j.Reason, j.UpdatedAt = to, reason, now
		if err := put(tx.Bucket(bucketJobs), j); err != nil {
			return err
		}
		if err := putEvent(tx, id, Event{Time: now, From: from, To: to, Reason: reason}); err != nil {
			return err
		}
		out = j
		return nil
	})
	return out, err
}

// Note adds an event to a job that changes nothing of it (what mmk did
// beside it: the latency controller suspended it, say); From and To are
// its state.
func (s *Store) Note(id string, now time.Time, reason string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		var j Job
		if err := get(tx, id, &j); err != nil {
			return err
		}
		return putEvent(tx, id, Event{Time: now, From: j.State, To: j.State, Reason: reason})
	})
}

// Update changes a job's fields other than its state (a pid, say).
func (s *Store) Update(id string, now time.Time, fn func(*Job)) (Job, error) {
	var out Job
	err := s.db.Update(func(tx *bolt.Tx) error {
		var j Job
		if err := get(tx, id, &j); err != nil {
			return err
		}
		state := j.State
		fn(&j)
		j.State, j.UpdatedAt = state, now
		out = j
		return put(tx.Bucket(bucketJobs), j)
	})
	return out, err
}

// Delete removes a finished job with its events and idempotency key. A
// job that has not ended is refused (*TransitionError to itself).
func (s *Store) Delete(id string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		var j Job
		if err := get(tx, id, &j); err != nil {
			return err
		}
		if !j.State.Terminal() {
			return fmt.Errorf("job %s is %s: only a finished job is deleted", id, j.State)
		}
		if err := tx.Bucket(bucketJobs).Delete([]byte(id)); err != nil {
			return err
		}
		prefix := []byte(id + "/")
		c := tx.Bucket(bucketEvents).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		if k := idemKey(j); k != "" {
			idem := tx.Bucket(bucketIdem)
			if v := idem.Get([]byte(k)); v != nil && string(v) == id {
				return idem.Delete([]byte(k))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("job store: delete: %w", err)
	}
	return nil
}

// SetSLOSeen saves online jobs' request counts (Job.SLOSeen), in one
// commit, without an event; a job the store no longer holds is skipped.
func (s *Store) SetSLOSeen(seen map[string]SLOSeen) error {
	if len(seen) == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketJobs)
		for id, c := range seen {
			var j Job
			if err := get(tx, id, &j); errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			j.SLOSeen = &c
			if err := put(b, j); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("job store: request counts: %w", err)
	}
	return nil
}

// Events returns a job's transitions in order.
func (s *Store) Events(id string) ([]Event, error) {
	var out []Event
	err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketJobs).Get([]byte(id)) == nil {
			return fmt.Errorf("job %s: %w", id, ErrNotFound)
		}
		prefix := []byte(id + "/")
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var e Event
			if err := loadRecord(v, &e); err != nil {
				return fmt.Errorf("event %s: %w", k, err)
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// AddReconfig records a reconfiguration and returns it with its number.
func (s *Store) AddReconfig(r Reconfig) (Reconfig, error) {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketReconfig)
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		r.Seq = int(seq)
		v, err := EncodeRecord(r)
		if err != nil {
			return err
		}
		return b.Put(seqKey(seq), v)
	})
	if err != nil {
		return Reconfig{}, fmt.Errorf("job store: reconfiguration: %w", err)
	}
	return r, nil
}

// Reconfigs returns the last n reconfigurations, newest first (n <= 0:
// all).
func (s *Store) Reconfigs(n int) ([]Reconfig, error) {
	var out []Reconfig
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketReconfig).Cursor()
		for k, v := c.Last(); k != nil && (n <= 0 || len(out) < n); k, v = c.Prev() {
			var r Reconfig
			if err := loadRecord(v, &r); err != nil {
				return fmt.Errorf("reconfiguration %x: %w", k, err)
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

func get(tx *bolt.Tx, id string, j *Job) error {
	v := tx.Bucket(bucketJobs).Get([]byte(id))
	if v == nil {
		return fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	if err := loadRecord(v, j); err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	return nil
}

func put(b *bolt.Bucket, j Job) error {
	v, err := EncodeRecord(j)
	if err != nil {
		return fmt.Errorf("job %s: %w", j.ID, err)
	}
	return b.Put([]byte(j.ID), v)
}

func putEvent(tx *bolt.Tx, id string, e Event) error {
	b := tx.Bucket(bucketEvents)
	// Events of a job sort by their number under "id/".
	prefix := []byte(id + "/")
	n := 0
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	e.Seq = n + 1
	v, err := EncodeRecord(e)
	if err != nil {
		return err
	}
	return b.Put(append(prefix, seqKey(uint64(e.Seq))...), v)
}

func seqKey(n uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], n)
	return k[:]
}
