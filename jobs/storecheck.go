package jobs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// ErrStoreDamaged is a job store file that cannot be trusted: empty (a
// file truncated to nothing, which bbolt would silently start afresh),
// shorter than its own pages say (truncated), or failing bbolt's
// consistency check. mmkd then restores the last backup (RestoreStore)
// or refuses to start.
var ErrStoreDamaged = errors.New("job store is damaged")

// maxCheckErrors bounds the consistency errors an error message lists.
const maxCheckErrors = 5

// openChecked opens the bbolt file at path and checks it before anyone
// reads it: an empty file is damaged, not new; bbolt's own panics and
// the bus errors of a truncated memory-mapped file become errors
// (debug.SetPanicOnFault, on this goroutine, where bbolt reads the file
// at open); the file must be as long as its pages say; and tx.Check
// walks every page. tx.Check runs in a goroutine of its own, where a
// fault (a damaged page pointing out of the file) kills the process:
// with o.CheckCommand set it runs in a child process instead, on a copy,
// with a trial write (checkInChild). inChild is that child's own check:
// it stops at the first errors and leaves a damaged file open (the
// process ends).
func openChecked(path string, o *OpenOptions, inChild bool) (*bolt.DB, error) {
	db, verdict, err := openChecking(path, o, inChild)
	if err != nil {
		return nil, err
	}
	if err := verdict(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// openChecking is openChecked returning once the store's structure is
// checked, its pages safe to read; with a child's check (o.CheckCommand)
// verdict waits for the rest of it (the trial write) and says whether
// the store may be written. Without one, verdict is nil at once.
func openChecking(path string, o *OpenOptions, inChild bool) (db *bolt.DB, verdict func() error, err error) {
	if st, err := os.Stat(path); err == nil && st.Size() == 0 {
		return nil, nil, fmt.Errorf("job store %s: %w: the file is empty (truncated?)", path, ErrStoreDamaged)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("job store %s: %w", path, err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				db.Close()
			}
			db, verdict, err = nil, nil, fmt.Errorf("job store %s: %w: %v", path, ErrStoreDamaged, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, nil, fmt.Errorf("job store %s: locked by another process (is another mmkd running with this data directory?)", path)
		}
		if errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrChecksum) || errors.Is(err, bolterrors.ErrVersionMismatch) {
			return nil, nil, fmt.Errorf("job store %s: %w: %v", path, ErrStoreDamaged, err)
		}
		return nil, nil, fmt.Errorf("job store %s: %w", path, err)
	}
	verdict = func() error { return nil }
	if o != nil && len(o.CheckCommand) > 0 {
		err = checkLength(db, path)
		if err == nil {
			verdict, err = startCheckInChild(path, o)
		}
	} else {
		err = checkStore(db, path, inChild)
	}
	if err != nil {
		if !inChild {
			db.Close()
		}
		return nil, nil, err
	}
	return db, verdict, nil
}

// checkLength compares the file's length with the pages it claims.
func checkLength(db *bolt.DB, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("job store %s: %w", path, err)
	}
	return db.View(func(tx *bolt.Tx) error {
		if st.Size() < tx.Size() {
			return fmt.Errorf("job store %s: %w: the file holds %d bytes of its %d (truncated)", path, ErrStoreDamaged, st.Size(), tx.Size())
		}
		return nil
	})
}

// checkPages reads the header of every page of the store from the file
// (not the mapping: no fault) before bbolt's check meets them, and
// finds three kinds of damage that check does not bound or see:
//   - a page in use whose header claims overflow pages past the
//     store's high-water mark: bbolt's check walks a page's overflow a
//     page at a time, remembering each, so that a flip in the count's
//     high bytes sent it round billions of pages (minutes, gigabytes),
//     and round the freelist page's count of 0xffffffff for ever (its
//     counter is a uint32). With this its work is bounded by the
//     store's pages;
//   - a branch or leaf page in use with an element whose key or value
//     lies past the page (and its overflow): bbolt reads such a key
//     from whatever memory follows, without a fault, and a write of
//     the page copies it from there (the corruption sweep's seed 81 of
//     4 flips: a value of a gigabyte);
//   - a branch element whose key is not the first key of the page it
//     points to (branchKeys). bbolt keeps the two equal, and finds a
//     child's entry in its parent by that key when it writes the
//     child anew: where they differ the parent keeps its old entry
//     beside the new one, pointing to a page that is freed, and a
//     later write that reused the page panicked ("write: circular
//     dependency occurred"; the corruption sweep's seed 144 of 64
//     flips, one byte of an event's key, mmkd's first writes after its
//     start).
//
// It skips the pages the freelist holds (their headers are stale) and
// the inside of an overflow run (a page whose header names another, or
// one that follows a page in use within its overflow).
func checkPages(db *bolt.DB, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("job store %s: %w", path, err)
	}
	defer f.Close()
	size := int64(db.Info().PageSize)
	return db.View(func(tx *bolt.Tx) error {
		hwm := tx.Size() / size
		var h [pageHeaderSize]byte // id 8, flags 2, count 2, overflow 4
		var run []byte             // a branch or leaf page and its overflow
		inside := int64(0)         // the last page of the last run in use
		var keys branchKeys
		for id := int64(2); id < hwm; id++ {
			if id <= inside {
				continue
			}
			if _, err := f.ReadAt(h[:], id*size); err != nil {
				return fmt.Errorf("job store %s: page %d: %w", path, id, err)
			}
			if int64(binary.LittleEndian.Uint64(h[0:8])) != id {
				continue
			}
			if p, err := tx.Page(int(id)); err != nil || p == nil || p.Type == "free" {
				continue
			}
			flags := binary.LittleEndian.Uint16(h[8:10])
			overflow := int64(binary.LittleEndian.Uint32(h[12:16]))
			if id+overflow >= hwm {
				return fmt.Errorf("job store %s: %w: page %d claims %d overflow pages, past the store's %d pages", path, ErrStoreDamaged, id, overflow, hwm)
			}
			inside = id + overflow
			if flags&(branchPage|leafPage) == 0 {
				continue
			}
			run = slices.Grow(run[:0], int((overflow+1)*size))[:(overflow+1)*size]
			if _, err := f.ReadAt(run, id*size); err != nil {
				return fmt.Errorf("job store %s: page %d: %w", path, id, err)
			}
			if problem := elementsOutside(run, flags&leafPage != 0); problem != "" {
				return fmt.Errorf("job store %s: %w: page %d: %s", path, ErrStoreDamaged, id, problem)
			}
			keys.add(id, run, flags&branchPage != 0)
		}
		if problem := keys.problem(); problem != "" {
			return fmt.Errorf("job store %s: %w: %s", path, ErrStoreDamaged, problem)
		}
		return nil
	})
}

// branchKeys gathers, of the pages checkPages reads, each page's first
// key and each branch element's key and page, and says where the two
// differ (a child whose page is not among them is bbolt's check's).
type branchKeys struct {
	first map[int64][]byte
	elems []branchElement
}

// branchElement is a branch page's element: its key and the page it
// points to.
type branchElement struct {
	page, i, child int64
	key            []byte
}

// add notes page id's run (its elements checked by elementsOutside).
func (b *branchKeys) add(id int64, run []byte, branch bool) {
	count := int64(binary.LittleEndian.Uint16(run[10:12]))
	if count == 0 {
		return
	}
	if b.first == nil {
		b.first = map[int64][]byte{}
	}
	key := func(i int64) []byte {
		at, ksize, _ := element(run, uint64(i), !branch)
		return bytes.Clone(run[at : at+ksize])
	}
	b.first[id] = key(0)
	if !branch {
		return
	}
	for i := range count {
		at := pageHeaderSize + i*elementSize
		child := int64(binary.LittleEndian.Uint64(run[at+8 : at+16]))
		b.elems = append(b.elems, branchElement{page: id, i: i, child: child, key: key(i)})
	}
}

// problem names the first branch element whose key is not its child's
// first key ("" if none).
func (b *branchKeys) problem() string {
	for _, e := range b.elems {
		if first, ok := b.first[e.child]; ok && !bytes.Equal(first, e.key) {
			return fmt.Sprintf("page %d: element %d's key %q is not the first key %q of page %d, which it points to", e.page, e.i, e.key[:min(len(e.key), 64)], first[:min(len(first), 64)], e.child)
		}
	}
	return ""
}

// bbolt's page format (unchanged since boltdb): a header of
// pageHeaderSize bytes, its flags, and the elements of a branch or leaf
// page after it, elementSize bytes each.
const (
	pageHeaderSize = 16
	elementSize    = 16
	branchPage     = 0x01
	leafPage       = 0x02
)

// elementsOutside says which element of the branch or leaf page run
// (the page and its overflow) has its key or value past the run ("" if
// none does); the value follows the key.
func elementsOutside(run []byte, leaf bool) string {
	count := uint64(binary.LittleEndian.Uint16(run[10:12]))
	end := uint64(len(run))
	if pageHeaderSize+count*elementSize > end {
		return fmt.Sprintf("%d elements do not fit in its %d bytes", count, end)
	}
	for i := range count {
		if at, ksize, vsize := element(run, i, leaf); at+ksize+vsize > end {
			return fmt.Sprintf("element %d's key and value (%d+%d bytes at %d) lie past its %d bytes", i, ksize, vsize, at, end)
		}
	}
	return ""
}

// element reads element i of a branch or leaf page run: where its key
// starts in run (its pos counts from the element) and the sizes of its
// key and value (0 in a branch page). A branch element is pos, ksize
// (uint32 each) and a page id; a leaf element flags, pos, ksize, vsize.
func element(run []byte, i uint64, leaf bool) (at, ksize, vsize uint64) {
	at = pageHeaderSize + i*elementSize
	e := run[at : at+elementSize]
	if leaf {
		e = e[4:]
		vsize = uint64(binary.LittleEndian.Uint32(e[8:12]))
	}
	return at + uint64(binary.LittleEndian.Uint32(e[0:4])), uint64(binary.LittleEndian.Uint32(e[4:8])), vsize
}

// checkStore compares the file's length with the pages it claims, checks
// the pages' overflow and elements (checkPages) and runs bbolt's consistency
// check; early stops at maxCheckErrors errors (a
// damaged page can make billions), leaving the check's goroutine
// blocked: for a process that ends then.
func checkStore(db *bolt.DB, path string, early bool) error {
	if err := checkLength(db, path); err != nil {
		return err
	}
	if err := checkPages(db, path); err != nil {
		return err
	}
	return db.View(func(tx *bolt.Tx) error {
		var problems []string
		n := 0
		for err := range tx.Check() {
			n++
			if len(problems) < maxCheckErrors {
				problems = append(problems, err.Error())
			} else if early {
				break
			}
		}
		if n > 0 {
			return fmt.Errorf("job store %s: %w: %d consistency errors: %s", path, ErrStoreDamaged, n, strings.Join(problems, "; "))
		}
		return nil
	})
}
