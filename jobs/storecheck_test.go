package jobs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// filledStore writes a store of n jobs (in one commit) and closes it;
// it returns its path and the bytes its pages take (bbolt's high-water
// mark; the file may be longer).
func filledStore(t *testing.T, n int) (string, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mmk.db")
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	err = s.db.Update(func(tx *bolt.Tx) error {
		for i := range n {
			if err := put(tx.Bucket(bucketJobs), newJob(fmt.Sprintf("%016d", i+1), "")); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = s.db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, used
}

// TestDamagedStoreRefused: a store file truncated to nothing (which bbolt
// would take for a new, empty store), cut short of its pages (bbolt
// panics at open, or the mapped file faults with SIGBUS past its end),
// or overwritten is refused with ErrStoreDamaged, never opened empty and
// never a crash. Cutting only the unused space at the file's end harms
// nothing: that store opens whole.
func TestDamagedStoreRefused(t *testing.T) {
	good, used := filledStore(t, 3000)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) < used {
		t.Fatalf("the file holds %d bytes of its %d", len(data), used)
	}
	const page = 4096
	tests := []struct {
		name string
		make func(path string) error
	}{
		{"truncated to 0 bytes", func(p string) error { return os.WriteFile(p, nil, 0o600) }},
		{"cut to 1 %", func(p string) error { return os.WriteFile(p, data[:len(data)/100], 0o600) }},
		{"cut to half", func(p string) error { return os.WriteFile(p, data[:len(data)/2], 0o600) }},
		{"cut to 80 % of its pages", func(p string) error { return os.WriteFile(p, data[:used*8/10], 0o600) }},
		{"its last page cut", func(p string) error { return os.WriteFile(p, data[:used-page], 0o600) }},
		{"not a store", func(p string) error { return os.WriteFile(p, []byte("hello, this is not bbolt\n"), 0o600) }},
		{"pages zeroed", func(p string) error {
			d := append([]byte(nil), data...)
			clear(d[used/4/page*page : used/2/page*page])
			return os.WriteFile(p, d, 0o600)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mmk.db")
			if err := tt.make(path); err != nil {
				t.Fatal(err)
			}
			s, err := OpenStore(path)
			if err == nil {
				all, _ := s.All()
				s.Close()
				t.Fatalf("opened (%d jobs), want ErrStoreDamaged", len(all))
			}
			if !errors.Is(err, ErrStoreDamaged) {
				t.Fatalf("error %v, want ErrStoreDamaged", err)
			}
			t.Log(err)
		})
	}
	for _, size := range []int64{int64(len(data)), used} {
		path := filepath.Join(t.TempDir(), "mmk.db")
		if err := os.WriteFile(path, data[:size], 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := OpenStore(path)
		if err != nil {
			t.Fatalf("the good store cut to %d of %d bytes (its pages take %d): %v", size, len(data), used, err)
		}
		if all, err := s.All(); err != nil || len(all) != 3000 {
			t.Errorf("the good store cut to %d bytes: %d jobs, %v", size, len(all), err)
		}
		s.Close()
	}
}

// TestBadRecordSetAside: a job record that cannot be read (not JSON, or
// not the job its key names) is set aside at open, with its reason,
// instead of stopping the store (and mmkd) from loading the others.
func TestBadRecordSetAside(t *testing.T) {
	path, _ := filledStore(t, 3)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketJobs)
		if err := b.Put([]byte("0000000000000002"), []byte("{not json")); err != nil {
			return err
		}
		return b.Put([]byte("0000000000000003"), []byte(`{"id":"0000000000000009","state":"pending"}`))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(path)
	if err != nil {
		t.Fatalf("one bad record stops the store: %v", err)
	}
	defer s.Close()
	all, err := s.All()
	if err != nil || len(all) != 1 || all[0].ID != "0000000000000001" {
		t.Fatalf("jobs %v %v, want the one good record", all, err)
	}
	aside := s.SetAside()
	if len(aside) != 2 || aside[0].Key != "0000000000000002" || aside[1].Key != "0000000000000003" || aside[0].Reason == "" {
		t.Errorf("set aside %+v", aside)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketSetAside).Get([]byte("jobs/0000000000000002")); string(v) != "{not json" {
			return fmt.Errorf("set-aside bucket holds %q", v)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// TestBackupRestore: a backup taken while the store is in use is a whole
// store; a damaged store is replaced by it, the damaged file kept beside.
func TestBackupRestore(t *testing.T) {
	s, path := openTemp(t)
	for i := range 100 {
		if _, _, err := s.Create(newJob(fmt.Sprintf("%016d", i+1), "")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Backup(path + BackupSuffix); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path + BackupSuffix); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup %v %v, want 0600", st, err)
	}
	s.Close()
	if _, err := RestoreStore(filepath.Join(t.TempDir(), "none.db")); err == nil {
		t.Error("restored without a backup")
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	kept, err := RestoreStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(kept); err != nil || st.Size() != 0 {
		t.Errorf("the damaged store was not kept: %v %v", st, err)
	}
	r, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if all, _ := r.All(); len(all) != 100 {
		t.Errorf("restored store holds %d jobs, want 100", len(all))
	}
	// A damaged backup is refused and nothing changes.
	if err := os.WriteFile(path+BackupSuffix, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreStore(path); !errors.Is(err, ErrStoreDamaged) {
		t.Errorf("restore from a damaged backup: %v", err)
	}
}

// setOverflow sets the overflow count in the header of the store's
// page of type typ that is in use (its freelist, say; for "leaf", the
// last in the file) to n, as a flipped byte would.
func setOverflow(t *testing.T, path, typ string, n uint32) {
	t.Helper()
	id, p := pageOf(t, path, typ)
	binary.LittleEndian.PutUint32(p[12:16], n) // id 8, flags 2, count 2, overflow 4
	writePage(t, path, id, p)
}

// pageOf reads the last page in use of type typ (bbolt's PageInfo.Type:
// "branch", "leaf", "freelist") of the store at path: its id and bytes.
func pageOf(t *testing.T, path, typ string) (int, []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := -1
	size := db.Info().PageSize
	err = db.View(func(tx *bolt.Tx) error {
		for id := 2; ; id++ {
			p, err := tx.Page(id)
			if err != nil || p == nil {
				return err
			}
			if p.Type == typ {
				at = id
			}
		}
	})
	db.Close()
	if err != nil || at < 0 {
		t.Fatalf("no %s page in use (%v)", typ, err)
	}
	return at, readPage(t, path, at, size)
}

// readPage reads page id (of size bytes) of the store at path.
func readPage(t *testing.T, path string, id, size int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, size)
	if _, err := f.ReadAt(p, int64(id*size)); err != nil {
		t.Fatal(err)
	}
	return p
}

// writePage writes p as page id of the store at path.
func writePage(t *testing.T, path string, id int, p []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(p, int64(id*len(p))); err != nil {
		t.Fatal(err)
	}
}

// TestPageDamageFound: damage that bbolt's check lets pass, and that
// made a write go wrong later, is found at open: a leaf element whose
// value lies past its page (bbolt reads it from whatever memory
// follows; the corruption sweep's seed 81 of 4 flips), and a branch
// element whose key is not the first key of the page it points to (a
// write of that page then leaves the parent's old entry beside the new,
// pointing to a page freed and later reused: mmkd's first writes
// panicked, seed 144 of 64 flips). Each was opened before.
func TestPageDamageFound(t *testing.T) {
	for _, c := range []struct {
		name, want string
		damage     func(t *testing.T, path string)
	}{
		{"a value past its page", "lie past", func(t *testing.T, path string) {
			id, p := pageOf(t, path, "leaf")
			binary.LittleEndian.PutUint32(p[16+12:16+16], 0x3f000000) // element 0: flags, pos, ksize, vsize
			writePage(t, path, id, p)
		}},
		{"a branch key not its child's first key", "is not the first key", func(t *testing.T, path string) {
			_, p := pageOf(t, path, "branch")
			e := p[16+16 : 16+32] // element 1: pos, ksize, page id
			child := int(binary.LittleEndian.Uint64(e[8:16]))
			c := readPage(t, path, child, len(p))
			// Its element 0's key (pos counts from the element): a branch
			// element is pos and ksize first, a leaf element flags first.
			e0 := c[16:32]
			if binary.LittleEndian.Uint16(c[8:10])&0x02 != 0 {
				e0 = e0[4:]
			}
			end := 16 + binary.LittleEndian.Uint32(e0[0:4]) + binary.LittleEndian.Uint32(e0[4:8])
			c[end-1]++ // the key's last byte: still after the keys before it
			writePage(t, path, child, c)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, _ := filledStore(t, 3000)
			c.damage(t, path)
			s, err := OpenStore(path)
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, ErrStoreDamaged) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want damage saying %q", err, c.want)
			}
		})
	}
}

// TestHugeOverflowIsDamage (issue 38: seed 45 of the store check's
// byte flips): a page whose header claims overflow pages past the
// store's end is damage, found at once. bbolt's check walks a page's
// overflow one page at a time, remembering each: a flip in the count's
// high bytes sent it round billions of pages, minutes and gigabytes,
// and the freelist page's count of 0xffffffff never ends (its loop
// counter is a uint32). Before, these OpenStores did not return within
// 20 s.
func TestHugeOverflowIsDamage(t *testing.T) {
	for _, c := range []struct {
		typ string
		n   uint32
	}{{"freelist", 0xffffffff}, {"leaf", 0x80000000}} {
		t.Run(c.typ, func(t *testing.T) {
			path, _ := filledStore(t, 3000)
			setOverflow(t, path, c.typ, c.n)
			done := make(chan error, 1)
			go func() {
				s, err := OpenStore(path)
				if err == nil {
					s.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrStoreDamaged) || !strings.Contains(err.Error(), "overflow") {
					t.Errorf("a %s page of %d overflow pages: %v, want damage naming the overflow", c.typ, c.n, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("a %s page of %d overflow pages: the check ran past 20 s", c.typ, c.n)
			}
		})
	}
}
