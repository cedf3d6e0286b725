package jobs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// logWriter appends to a job's log file and, when the file is full,
// renames it to <log>.1 (replacing the one there) and starts a new one, so
// that a job's output takes at most twice the cap on disk. Each file holds
// at most max bytes: a write that does not fit is split at the cap, which
// may split a line between log.1 and log. Only the shim writes it, from
// one goroutine.
type logWriter struct {
	path string
	max  int64 // 0: no cap
	f    *os.File
	size int64
}

// openLog opens (creating it if needed) the log at path for appending.
func openLog(path string, max int64) (*logWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open log: %w", err)
	}
	return &logWriter{path: path, max: max, f: f, size: st.Size()}, nil
}

// Write appends p, rotating as often as needed.
func (w *logWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if w.max > 0 && w.size >= w.max {
			if err := w.rotate(); err != nil {
				return n, err
			}
		}
		chunk := p
		if w.max > 0 && int64(len(chunk)) > w.max-w.size {
			chunk = chunk[:w.max-w.size]
		}
		m, err := w.f.Write(chunk)
		n += m
		w.size += int64(m)
		p = p[m:]
		if err != nil {
			return n, fmt.Errorf("write log: %w", err)
		}
	}
	return n, nil
}

func (w *logWriter) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	if err := os.Rename(w.path, w.path+".1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate log: %w", err)
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	w.f, w.size = f, 0
	return nil
}

// Close closes the file.
func (w *logWriter) Close() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close log: %w", err)
	}
	return nil
}
