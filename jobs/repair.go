package jobs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// A byte flip can leave bbolt's structure whole and damage a record: its
// value, or its key. bbolt's check does not read values, so OpenStore
// reads every job, event and reconfiguration: one that cannot be read is
// set aside (findBad, setAsideRecords), the records the store lost are put back from
// the backup (putBackFrom), and the idempotency keys are mended from the
// job records (keysToMend, putKeys). What the store holds newer than the backup
// stays; a record damaged and newer than the backup is lost (a job that
// started comes back from its directory, node/orphans.go).

// SetAsideRecord is a record OpenStore could not read: it was moved to
// the store's "set-aside" bucket, where it stays for an operator.
type SetAsideRecord struct {
	// Bucket is the bucket it was in: jobs, events or reconfigs.
	Bucket string
	// Key is its key, printable: a job id, "id/seq" of an event, the
	// number of a reconfiguration (other keys quoted).
	Key    string
	Reason string
	// raw is its key in Bucket.
	raw []byte
}

// bucketSetAside holds the records moved out of the others, under
// "bucket/key".
var bucketSetAside = []byte("set-aside")

// checked are the buckets whose records OpenStore reads, and how it
// says why a record cannot be served ("" if it can).
var checked = []struct {
	name []byte
	bad  func(k, v []byte, legacy bool) string
}{
	{bucketJobs, badRecord},
	{bucketEvents, badEvent},
	{bucketReconfig, badReconfig},
}

// findBad reads every job, event and reconfiguration and lists those
// that cannot be read (not JSON, or not what their key names: a job of
// another id, an event of another number), which setAsideRecords moves
// out of their buckets into the set-aside bucket, so that a bad record
// neither stops mmkd nor is lost. The jobs read are kept for the first
// All (Store.opened). With legacy (a store of schema 1), records without
// a checksum are read too. A bucket the store lacks (a new store) holds
// nothing. The records are read on all the CPUs (readRecords).
func (s *Store) findBad(legacy bool) (bad []SetAsideRecord, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		// Sized first (bbolt's counts of its pages, no record read): a
		// slice grown to some 60,000 records by append took a tenth of a
		// second of a start at 30,000 jobs, most of it copying and
		// clearing pointers while the collector ran.
		size := 0
		for _, c := range checked {
			if b := tx.Bucket(c.name); b != nil {
				size += b.Stats().KeyN
			}
		}
		recs := make([]record, 0, size)
		nJobs := 0
		for _, c := range checked {
			b := tx.Bucket(c.name)
			if b == nil {
				continue
			}
			err := b.ForEach(func(k, v []byte) error {
				recs = append(recs, record{bucket: c.name, k: k, v: v})
				return nil
			})
			if err != nil {
				return err
			}
			if bytes.Equal(c.name, bucketJobs) {
				nJobs = len(recs) // the jobs come first (checked)
			}
		}
		read := make([]Job, nJobs)
		reasons := readRecords(recs, func(i int, r record) string {
			if i < nJobs {
				return badJob(r.k, r.v, legacy, &read[i])
			}
			for _, c := range checked {
				if bytes.Equal(c.name, r.bucket) {
					return c.bad(r.k, r.v, legacy)
				}
			}
			return ""
		})
		// The jobs read are kept in place, those that cannot be served
		// left out (no second slice of 30,000 jobs copied).
		kept := 0
		for i, reason := range reasons {
			switch {
			case reason != "":
				r := recs[i]
				bad = append(bad, SetAsideRecord{Bucket: string(r.bucket), Key: printKey(r.bucket, r.k), Reason: reason, raw: bytes.Clone(r.k)})
			case i < nJobs:
				if kept != i {
					read[kept] = read[i]
				}
				kept++
			}
		}
		s.opened = read[:kept:kept]
		return nil
	})
	return bad, err
}

// readBlock is how many records a reader takes at a time.
const readBlock = 256

// readRecords says of each record why it cannot be served (check; ""
// if it can), on as many goroutines as there are CPUs, each taking
// blocks of readBlock records in turn (a start reads tens of thousands:
// 0.19 s of JSON for 30,000 jobs on one core). A panic or fault of one
// (a damaged page: each sets debug.SetPanicOnFault) is panicked again
// here, on the caller's goroutine, as if it had read them all itself.
func readRecords(recs []record, check func(i int, r record) string) []string {
	reasons := make([]string, len(recs))
	workers := min(runtime.GOMAXPROCS(0), (len(recs)+readBlock-1)/readBlock)
	var next atomic.Int64
	panics := make(chan any, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			defer func() {
				if r := recover(); r != nil {
					panics <- r
				}
			}()
			for {
				from := int(next.Add(readBlock)) - readBlock
				if from >= len(recs) {
					return
				}
				for i := from; i < min(from+readBlock, len(recs)); i++ {
					reasons[i] = check(i, recs[i])
				}
			}
		})
	}
	wg.Wait()
	close(panics)
	if p, ok := <-panics; ok {
		panic(p)
	}
	return reasons
}

// setAsideRecords moves the records findBad listed into the set-aside
// bucket (SetAside); it writes only when there is one.
func (s *Store) setAsideRecords(bad []SetAsideRecord) error {
	if len(bad) == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		aside, err := tx.CreateBucketIfNotExists(bucketSetAside)
		if err != nil {
			return err
		}
		for _, r := range bad {
			b := tx.Bucket([]byte(r.Bucket))
			if err := aside.Put(append([]byte(r.Bucket+"/"), r.raw...), b.Get(r.raw)); err != nil {
				return err
			}
			if err := b.Delete(r.raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.setAside = bad
	return nil
}

// printKey is a record's key in words.
func printKey(bucket, k []byte) string {
	switch {
	case bytes.Equal(bucket, bucketEvents) && len(k) == 16+1+8 && k[16] == '/':
		return string(k[:17]) + strconv.FormatUint(binary.BigEndian.Uint64(k[17:]), 10)
	case bytes.Equal(bucket, bucketReconfig) && len(k) == 8:
		return strconv.FormatUint(binary.BigEndian.Uint64(k), 10)
	case bytes.Equal(bucket, bucketJobs) && ValidID(string(k)):
		return string(k)
	}
	return strconv.Quote(string(k))
}

// badRecord says why a job record cannot be served ("" if it can).
func badRecord(k, v []byte, legacy bool) string {
	var j Job
	return badJob(k, v, legacy, &j)
}

// badJob is badRecord, the job read into j.
func badJob(k, v []byte, legacy bool, j *Job) string {
	if err := decodeRecord(v, j, legacy); err != nil {
		return "not a job record: " + err.Error()
	}
	switch {
	case !ValidID(string(k)):
		return fmt.Sprintf("key %q is not a job id", k)
	case j.ID != string(k):
		return fmt.Sprintf("the record is of job %q", j.ID)
	case !j.State.Valid():
		return fmt.Sprintf("state %q is not a state", j.State)
	}
	return ""
}

// badEvent says why an event cannot be served ("" if it can): its key is
// a job id, "/" and its number (putEvent), its value an event of that
// number.
func badEvent(k, v []byte, legacy bool) string {
	if len(k) != 16+1+8 || k[16] != '/' || !ValidID(string(k[:16])) {
		return fmt.Sprintf("key %q is not a job id and an event number", k)
	}
	var e Event
	if err := decodeRecord(v, &e, legacy); err != nil {
		return "not an event: " + err.Error()
	}
	if n := binary.BigEndian.Uint64(k[17:]); uint64(e.Seq) != n || !e.To.Valid() {
		return fmt.Sprintf("the event is number %d to %q, its key says number %d", e.Seq, e.To, n)
	}
	return ""
}

// badReconfig says why a reconfiguration cannot be served ("" if it
// can).
func badReconfig(k, v []byte, legacy bool) string {
	if len(k) != 8 {
		return fmt.Sprintf("key %q is not a number", k)
	}
	var r Reconfig
	if err := decodeRecord(v, &r, legacy); err != nil {
		return "not a reconfiguration: " + err.Error()
	}
	if n := binary.BigEndian.Uint64(k); uint64(r.Seq) != n {
		return fmt.Sprintf("the reconfiguration is number %d, its key says %d", r.Seq, n)
	}
	return ""
}

// record is a key and value of a bucket.
type record struct {
	bucket []byte
	k, v   []byte
}

// putBackFrom puts back from the backup at path (checked as a store is,
// as o says) what damage took from the store, once records were set
// aside: every job the backup holds and the store does not, the events
// of the store's jobs that the backup holds and the store does not
// (events are never changed, only added), and the reconfigurations set
// aside, each as the backup holds it where it can be read. The store's
// own records, newer than the backup, stay. A job deleted since the
// backup (a finished job past its retention) comes back and is deleted
// again by the next pruning.
func (s *Store) putBackFrom(path string, o *OpenOptions) error {
	bdb, err := openChecked(path, o, false)
	if err != nil {
		return fmt.Errorf("put back damaged records from the backup: %w", err)
	}
	defer bdb.Close()
	var puts []record
	var names []string
	err = s.db.View(func(stx *bolt.Tx) error {
		return bdb.View(func(btx *bolt.Tx) error {
			has := func(bucket, k []byte) bool { return stx.Bucket(bucket).Get(k) != nil }
			bjobs, bevents := btx.Bucket(bucketJobs), btx.Bucket(bucketEvents)
			if bjobs == nil || bevents == nil {
				return fmt.Errorf("the backup holds no jobs or events")
			}
			back := map[string]bool{}
			err := bjobs.ForEach(func(k, v []byte) error {
				if !has(bucketJobs, k) && badRecord(k, v, true) == "" {
					back[string(k)] = true
					puts = append(puts, record{bucketJobs, bytes.Clone(k), bytes.Clone(v)})
					names = append(names, "job "+string(k))
				}
				return nil
			})
			if err != nil {
				return err
			}
			err = bevents.ForEach(func(k, v []byte) error {
				if len(k) > 16 && (has(bucketJobs, k[:16]) || back[string(k[:16])]) && !has(bucketEvents, k) && badEvent(k, v, true) == "" {
					puts = append(puts, record{bucketEvents, bytes.Clone(k), bytes.Clone(v)})
					names = append(names, "event "+printKey(bucketEvents, k))
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, r := range s.setAside {
				if r.Bucket != string(bucketReconfig) {
					continue
				}
				if b := btx.Bucket(bucketReconfig); b != nil {
					if v := b.Get(r.raw); v != nil && !has(bucketReconfig, r.raw) && badReconfig(r.raw, v, true) == "" {
						puts = append(puts, record{bucketReconfig, bytes.Clone(r.raw), bytes.Clone(v)})
						names = append(names, "reconfiguration "+r.Key)
					}
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("put back damaged records from the backup %s: %w", path, err)
	}
	if len(puts) == 0 {
		return nil
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		for _, r := range puts {
			// A backup of schema 1 holds records without checksums.
			v, err := reencode(r.v, newRecord(r.bucket))
			if err != nil {
				return err
			}
			if err := tx.Bucket(r.bucket).Put(r.k, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put back damaged records from the backup %s: %w", path, err)
	}
	s.putBack = names
	return nil
}

// keyFields are what keysToMend reads of a job's record: what its
// idempotency key is made of (a third of the cost of the whole job).
type keyFields struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotencyKey"`
	Owner          *Owner `json:"owner"`
}

func (k keyFields) job() Job { return Job{ID: k.ID, IdempotencyKey: k.IdempotencyKey, Owner: k.Owner} }

// load reads k from a job's record: its checksum checked, the three
// members found by a scan of its text and only they decoded (the record
// was read whole and strictly when the store opened), each key matched
// to its field as encoding/json matches them (fieldSets.find: without
// regard to case; of a field given twice the last counts). A record the
// scan does not take is decoded whole.
func (k *keyFields) load(data []byte) error {
	body, err := summedBody(data)
	if err != nil {
		return err
	}
	sc, keys, vals, ok := scan(body)
	defer sc.release()
	if !ok {
		return json.Unmarshal(body, k)
	}
	// In the struct's order, as fields lists them.
	dst := [...]any{&k.ID, &k.IdempotencyKey, &k.Owner}
	var val [len(dst)][]byte
	fs := fields(reflect.TypeFor[keyFields]())
	for i, key := range keys {
		if f := fs.find(key); f >= 0 {
			val[f] = vals[i]
		}
	}
	for f, v := range val {
		if v == nil {
			continue
		}
		if err := json.Unmarshal(v, dst[f]); err != nil {
			return err
		}
	}
	return nil
}

// keysToMend lists the idempotency keys to put again (key, job id) so
// that every job's key finds it: a key the idempotency bucket lacks, or
// that names no job, or a job submitted with another key. It only
// reads (a start runs it while the check's child makes its trial write);
// putKeys writes what it lists.
func (s *Store) keysToMend() (mend [][2]string, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		jobs, idem := tx.Bucket(bucketJobs), tx.Bucket(bucketIdem)
		// keysOf reads a job's key fields: from the jobs the strict read
		// kept (Store.opened, in id order, when nothing was written since),
		// else from its record.
		keysOf := func(id, v []byte) (*Job, bool) {
			if s.opened != nil {
				i := sort.Search(len(s.opened), func(i int) bool { return s.opened[i].ID >= string(id) })
				if i == len(s.opened) || s.opened[i].ID != string(id) {
					return nil, false
				}
				return &s.opened[i], true
			}
			var kf keyFields
			if v == nil {
				v = jobs.Get(id)
			}
			if v == nil || kf.load(v) != nil {
				return nil, false
			}
			j := kf.job()
			return &j, true
		}
		// One buffer for every job's key (a string made for each was a
		// tenth of this at 30,000 jobs).
		var key []byte
		check := func(j *Job) {
			if key = appendIdemKey(key[:0], j); len(key) == 0 {
				return
			}
			cur := idem.Get(key)
			if string(cur) == j.ID {
				return
			}
			if cur != nil {
				if other, ok := keysOf(cur, nil); ok && idemKey(*other) == string(key) {
					return // two jobs of one key: the first keeps it
				}
			}
			mend = append(mend, [2]string{string(key), j.ID})
		}
		// The jobs the strict read kept are taken as they are (a look-up
		// of each in them, a Job copied at each step of the search, was
		// a third of this at 30,000 jobs).
		if s.opened != nil {
			for i := range s.opened {
				check(&s.opened[i])
			}
			return nil
		}
		return jobs.ForEach(func(k, v []byte) error {
			if j, ok := keysOf(k, v); ok {
				check(j)
			}
			return nil
		})
	})
	return mend, err
}

// putKeys puts the idempotency keys keysToMend listed, and notes them
// (KeysMended). It writes only when there is one.
func (s *Store) putKeys(mend [][2]string) error {
	if len(mend) == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, m := range mend {
			if err := tx.Bucket(bucketIdem).Put([]byte(m[0]), []byte(m[1])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, m := range mend {
		s.keysMended = append(s.keysMended, m[0])
	}
	return nil
}

// SetAside lists the records OpenStore moved out of the jobs, events and
// reconfigurations because they could not be read.
func (s *Store) SetAside() []SetAsideRecord { return s.setAside }

// PutBack lists the records OpenStoreWith put back from the backup
// (OpenOptions.Backup) after it set damaged ones aside: "job ID",
// "event ID/N", "reconfiguration N".
func (s *Store) PutBack() []string { return s.putBack }

// PutBackError is why the damaged records could not be put back from
// the backup (nil if they were, or none were set aside).
func (s *Store) PutBackError() error { return s.putBackErr }

// KeysMended lists the idempotency keys OpenStore put again because they
// did not find their job.
func (s *Store) KeysMended() []string { return s.keysMended }

// newRecord is a pointer to a record of bucket's kind, to decode into.
func newRecord(bucket []byte) any {
	switch {
	case bytes.Equal(bucket, bucketJobs):
		return new(Job)
	case bytes.Equal(bucket, bucketEvents):
		return new(Event)
	}
	return new(Reconfig)
}

// addChecksums rewrites a store of schema 1 as schema 2: every job,
// event and reconfiguration (read, once the unreadable ones were set
// aside) gets its checksum line, in one commit with the new schema
// number, so that a crash leaves the store wholly one or the other.
func (s *Store) addChecksums() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, c := range checked {
			b := tx.Bucket(c.name)
			var puts []record
			err := b.ForEach(func(k, v []byte) error {
				if _, summed, _ := splitSum(v); summed {
					return nil
				}
				nv, err := reencode(v, newRecord(c.name))
				if err != nil {
					return fmt.Errorf("%s %s: %w", c.name, printKey(c.name, k), err)
				}
				puts = append(puts, record{c.name, bytes.Clone(k), nv})
				return nil
			})
			if err != nil {
				return err
			}
			for _, r := range puts {
				if err := b.Put(r.k, r.v); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte(strconv.Itoa(SchemaVersion)))
	})
}
