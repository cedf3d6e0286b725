// Package atomicfile writes files so that a crash leaves either the old
// file or the new one, never a torn one.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write writes data to a temporary file beside path, syncs it and renames
// it over path. The file is readable by all (0644). The directory is not
// synced (WriteFunc syncs it).
func Write(path string, data []byte) error {
	return replace(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc writes a file through write: a temporary file beside path
// with mode perm, synced and renamed over path, and then the directory
// synced, so that the rename too outlasts a crash. A failed write leaves
// the old file.
func WriteFunc(path string, perm os.FileMode, write func(io.Writer) error) error {
	if err := replace(path, perm, write); err != nil {
		return err
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SyncDir syncs the directory dir, making the renames and removals in it
// durable. Its errors are os's, which name dir.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// replace writes a temporary file beside path through write, sets its
// mode to perm, syncs it and renames it over path.
func replace(path string, perm os.FileMode, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
