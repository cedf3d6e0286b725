package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mmkgpu/mmk/internal/atomicfile"
)

// BackupSuffix names a store's backup beside it: mmk.db.bak.
const BackupSuffix = ".bak"

// Backup writes a consistent copy of the store (one read transaction,
// bbolt's WriteTo: submissions go on meanwhile) to path, atomically and
// 0600 (it holds the jobs' environments, as the store does).
func (s *Store) Backup(path string) error {
	err := atomicfile.WriteFunc(path, 0o600, func(w io.Writer) error {
		return s.db.View(func(tx *bolt.Tx) error {
			_, err := tx.WriteTo(w)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("back up the job store: %w", err)
	}
	return nil
}

// BackupEvery backs the store up to its path + BackupSuffix at once and
// then every interval, until ctx ends. A failed backup is logged and
// tried again at the next tick; the previous backup stays.
func (s *Store) BackupEvery(ctx context.Context, every time.Duration, log *slog.Logger) {
	dest := s.path + BackupSuffix
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := s.Backup(dest); err != nil {
			log.Error("job store backup failed; the previous one stays", "err", err)
		} else {
			log.Debug("job store backed up", "to", dest)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// RestoreStore replaces the damaged (or missing) store at path with its
// backup (path + BackupSuffix), once the backup has passed the same
// checks as a store: the damaged file is kept beside it as
// path.damaged-TIME, which RestoreStore returns ("" when there was no
// file). It fails, changing nothing, when there is no backup or it is
// damaged too. It checks the backup in this process; RestoreStoreWith
// as o says.
func RestoreStore(path string) (kept string, err error) { return RestoreStoreWith(path, OpenOptions{}) }

// RestoreStoreWith is RestoreStore with the backup's check run as o says.
func RestoreStoreWith(path string, o OpenOptions) (kept string, err error) {
	backup := path + BackupSuffix
	if _, err := os.Stat(backup); err != nil {
		return "", fmt.Errorf("restore the job store: no backup: %w", err)
	}
	db, err := openChecked(backup, &o, false)
	if err != nil {
		return "", fmt.Errorf("restore the job store: the backup: %w", err)
	}
	if err := db.Close(); err != nil {
		return "", fmt.Errorf("restore the job store: %w", err)
	}
	src, err := os.Open(backup)
	if err != nil {
		return "", fmt.Errorf("restore the job store: %w", err)
	}
	defer src.Close()
	restored := path + ".restored"
	if err := atomicfile.WriteFunc(restored, 0o600, func(w io.Writer) error {
		_, err := io.Copy(w, src)
		return err
	}); err != nil {
		return "", fmt.Errorf("restore the job store: %w", err)
	}
	defer os.Remove(restored)
	kept = fmt.Sprintf("%s.damaged-%s", path, time.Now().UTC().Format("20060102T150405Z"))
	if err := os.Rename(path, kept); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("restore the job store: keep the damaged one: %w", err)
	} else if err != nil {
		kept = ""
	}
	if err := os.Rename(restored, path); err != nil {
		return "", fmt.Errorf("restore the job store: %w", err)
	}
	return kept, atomicfile.SyncDir(filepath.Dir(path))
}
