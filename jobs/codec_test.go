package jobs

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// ownedJob is a job of user 1000, as a submission over the socket makes
// it.
func ownedJob(id string) Job {
	j := newJob(id, "")
	j.Owner = &Owner{UID: 1000, GID: 1000, Name: "bob"}
	return j
}

// TestEveryBitFlipIsCaught: a record with one bit flipped anywhere (its
// JSON or its checksum line) is refused, never read as another job.
// Before (schema 1), a flip inside a key dropped the field silently.
func TestEveryBitFlipIsCaught(t *testing.T) {
	rec, err := EncodeRecord(ownedJob("0000000000000001"))
	if err != nil {
		t.Fatal(err)
	}
	var j Job
	if err := decodeRecord(rec, &j, false); err != nil || j.Owner.UID != 1000 {
		t.Fatalf("the record itself: %+v, %v", j.Owner, err)
	}
	t.Logf("%d single-bit flips of a %d-byte record", 8*len(rec), len(rec))
	for i := range rec {
		for bit := range 8 {
			flipped := bytes.Clone(rec)
			flipped[i] ^= 1 << bit
			for _, legacy := range []bool{false, true} {
				var got Job
				if err := decodeRecord(flipped, &got, legacy); err == nil {
					t.Fatalf("byte %d bit %d (legacy %v): read as %+v owner %+v", i, bit, legacy, got, got.Owner)
				}
			}
		}
	}
}

// TestStrictRecords: fields unknown or (in a summed record) missing make
// a record damaged, naming the field; a legacy record (no checksum) is
// read only where allowed, and without the missing-field check.
func TestStrictRecords(t *testing.T) {
	sum := func(body string) []byte {
		return fmt.Appendf([]byte(body), "%s%08x", sumPrefix, crc32.Checksum([]byte(body), castagnoli))
	}
	full, err := EncodeRecord(ownedJob("0000000000000001"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(full[:len(full)-sumLen])
	for _, tc := range []struct {
		name   string
		data   []byte
		legacy bool
		err    string
	}{
		{"summed", full, false, ""},
		{"legacy allowed", []byte(body), true, ""},
		{"legacy refused", []byte(body), false, "no checksum"},
		{"unknown field, summed", sum(strings.Replace(body, `"uid"`, `"ukd"`, 1)), false, `unknown field "owner.ukd"`},
		{"unknown field, legacy", []byte(strings.Replace(body, `"uid"`, `"ukd"`, 1)), true, `unknown field "owner.ukd"`},
		{"missing field", sum(strings.Replace(body, `"restarts":0,`, ``, 1)), false, `field "restarts" is missing`},
		{"missing nested field", sum(strings.Replace(body, `"uid":1000,`, ``, 1)), false, `field "owner.uid" is missing`},
		{"missing field, legacy", []byte(strings.Replace(body, `"restarts":0,`, ``, 1)), true, ""},
		{"two values", sum(body + ` {}`), false, "data after the record"},
		{"checksum not hex", append([]byte(body), "\ncrc32c=zzzzzzzz"...), true, "not 8 lower-case hex digits"},
		{"checksum of another", append([]byte(body+" "), full[len(full)-sumLen:]...), true, "does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var j Job
			err := decodeRecord(tc.data, &j, tc.legacy)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("got %v, want an error with %q", err, tc.err)
			}
		})
	}
}

// TestFlippedOwnerNeverReadsAsRoot is the finding of issue 54 end to
// end: "uid" flipped to "ukd" in a queued job's record on disk. The
// record is set aside and put back from the backup with its owner;
// without a backup it is set aside, never served with uid 0.
func TestFlippedOwnerNeverReadsAsRoot(t *testing.T) {
	for _, backup := range []bool{true, false} {
		t.Run(fmt.Sprintf("backup=%v", backup), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mmk.db")
			s, err := OpenStore(path)
			if err != nil {
				t.Fatal(err)
			}
			id := "0000000000000001"
			if _, _, err := s.Create(ownedJob(id)); err != nil {
				t.Fatal(err)
			}
			if err := s.Backup(path + BackupSuffix); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Count(raw, []byte(`"uid"`)) != 1 {
				t.Fatalf("the file holds %q %d times", "uid", bytes.Count(raw, []byte(`"uid"`)))
			}
			if err := os.WriteFile(path, bytes.Replace(raw, []byte(`"uid"`), []byte(`"ukd"`), 1), 0o600); err != nil {
				t.Fatal(err)
			}
			o := OpenOptions{}
			if backup {
				o.Backup = path + BackupSuffix
			}
			s, err = OpenStoreWith(path, o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if len(s.SetAside()) != 1 || !strings.Contains(s.SetAside()[0].Reason, "does not match") {
				t.Errorf("set aside %+v, want job %s's record, its checksum not matching", s.SetAside(), id)
			}
			j, err := s.Get(id)
			switch {
			case backup && (err != nil || j.Owner == nil || j.Owner.UID != 1000):
				t.Errorf("put back: %+v, %v; want owner uid 1000", j.Owner, err)
			case !backup && err == nil:
				t.Errorf("served without a backup: owner %+v", j.Owner)
			}
		})
	}
}

// TestSchema1Upgraded: a store of schema 1 (records without checksums)
// opens; its readable records get checksums and the store schema 2, in
// one commit; a legacy record with a field this mmk does not know is set
// aside.
func TestSchema1Upgraded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mmk.db")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, _, err := s.Create(ownedJob(fmt.Sprintf("%016d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AddReconfig(Reconfig{GPU: 0, Cause: "arrival"}); err != nil {
		t.Fatal(err)
	}
	// Back to schema 1: every record without its checksum line, job 3's
	// owner with a key flipped.
	err = s.db.Update(func(tx *bolt.Tx) error {
		for _, c := range checked {
			b := tx.Bucket(c.name)
			var ks, vs [][]byte
			if err := b.ForEach(func(k, v []byte) error {
				ks, vs = append(ks, bytes.Clone(k)), append(vs, bytes.Clone(v[:len(v)-sumLen]))
				return nil
			}); err != nil {
				return err
			}
			for i := range ks {
				if string(ks[i]) == fmt.Sprintf("%016d", 3) {
					vs[i] = bytes.Replace(vs[i], []byte(`"uid"`), []byte(`"ukd"`), 1)
				}
				if err := b.Put(ks[i], vs[i]); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte("1"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if a := s.SetAside(); len(a) != 1 || a[0].Key != fmt.Sprintf("%016d", 3) || !strings.Contains(a[0].Reason, "ukd") {
		t.Errorf("set aside %+v, want job 3 (unknown field ukd)", a)
	}
	all, err := s.All()
	if err != nil || len(all) != 2 || all[0].Owner.UID != 1000 {
		t.Fatalf("jobs %+v, %v", all, err)
	}
	if r, err := s.Reconfigs(0); err != nil || len(r) != 1 {
		t.Errorf("reconfigurations %v, %v", r, err)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keySchema); string(v) != "2" {
			t.Errorf("schema %q, want 2", v)
		}
		for _, c := range checked {
			if err := tx.Bucket(c.name).ForEach(func(k, v []byte) error {
				if _, summed, err := splitSum(v); !summed || err != nil {
					t.Errorf("%s %s has no checksum (%v)", c.name, printKey(c.name, k), err)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodeRecord: no record panics the reader, and a record read as a
// job writes back to one that reads as the same job.
func FuzzDecodeRecord(f *testing.F) {
	rec, err := EncodeRecord(ownedJob("0000000000000001"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec, false)
	f.Add(rec[:len(rec)-sumLen], true)
	f.Add([]byte(`{"id":"x"}`+"\ncrc32c=00000000"), false)
	f.Fuzz(func(t *testing.T, data []byte, legacy bool) {
		var j Job
		if decodeRecord(data, &j, legacy) != nil {
			return
		}
		back, err := EncodeRecord(j)
		if err != nil {
			t.Fatal(err)
		}
		var again Job
		if err := decodeRecord(back, &again, false); err != nil {
			t.Fatalf("%q read, written as %q, not read back: %v", data, back, err)
		}
	})
}
