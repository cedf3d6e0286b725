package jobs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
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

// checkOverflow finds a page in use whose header claims overflow pages
// past the store's high-water mark, before bbolt's check meets it:
// that check walks a page's overflow a page at a time, remembering
// each, so that a flip in the count's high bytes sent it round billions
// of pages (minutes, gigabytes), and round the freelist page's count of
// 0xffffffff for ever (its counter is a uint32). With it the check's
// work is bounded by the store's pages. It reads the headers from the
// file, not the mapping (no fault), and skips the pages the freelist
// holds (their headers are stale) and those whose header names another
// page (the inside of an overflow run).
func checkOverflow(db *bolt.DB, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("job store %s: %w", path, err)
	}
	defer f.Close()
	size := db.Info().PageSize
	return db.View(func(tx *bolt.Tx) error {
		hwm := tx.Size() / int64(size)
		var h [16]byte // id 8, flags 2, count 2, overflow 4
		for id := int64(2); id < hwm; id++ {
			if _, err := f.ReadAt(h[:], id*int64(size)); err != nil {
				return fmt.Errorf("job store %s: page %d: %w", path, id, err)
			}
			if int64(binary.LittleEndian.Uint64(h[0:8])) != id {
				continue
			}
			overflow := int64(binary.LittleEndian.Uint32(h[12:16]))
			if id+overflow < hwm {
				continue
			}
			if p, err := tx.Page(int(id)); err != nil || p == nil || p.Type == "free" {
				continue
			}
			return fmt.Errorf("job store %s: %w: page %d claims %d overflow pages, past the store's %d pages", path, ErrStoreDamaged, id, overflow, hwm)
		}
		return nil
	})
}

// checkStore compares the file's length with the pages it claims, bounds
// the pages' overflow (checkOverflow) and runs bbolt's consistency
// check; early stops at maxCheckErrors errors (a
// damaged page can make billions), leaving the check's goroutine
// blocked: for a process that ends then.
func checkStore(db *bolt.DB, path string, early bool) error {
	if err := checkLength(db, path); err != nil {
		return err
	}
	if err := checkOverflow(db, path); err != nil {
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
