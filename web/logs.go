package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"
)

// jobLogs serves GET /jobs/:id/logs?follow=1&tail=BYTES: the job's log as
// plain text. Without tail it sends all that is kept (the rotated older
// part, PATH.1, then PATH); with tail the last BYTES bytes of the two.
// With follow it then sends what is written, across rotations, until the
// job has ended and no more bytes come, or the client goes away.
func (s *Server) jobLogs(c *gin.Context) {
	id, err := jobID(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	q, err := query(c, "follow", "tail", "lines")
	if err != nil {
		s.writeError(c, err)
		return
	}
	follow, err := boolParam(q, "follow")
	if err != nil {
		s.writeError(c, err)
		return
	}
	tail, err := intParam(q, "tail", 0, math.MaxInt64, -1)
	if err != nil {
		s.writeError(c, err)
		return
	}
	lines, err := intParam(q, "lines", 0, math.MaxInt64, -1)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if lines >= 0 && tail >= 0 {
		s.writeError(c, badRequest("lines", "give tail (bytes) or lines, not both"))
		return
	}
	if err := s.mayAct(c, id, "read the log of"); err != nil {
		s.writeError(c, err)
		return
	}
	path, err := s.node.LogPath(id)
	if err != nil {
		s.writeError(c, nodeError("job log path", err))
		return
	}
	lf := &logFile{path: path}
	defer lf.close()
	old, err := lf.openStart()
	if err != nil {
		s.writeError(c, err)
		return
	}
	if lines >= 0 {
		if tail, err = lf.tailOfLines(old, lines); err != nil {
			if old != nil {
				old.Close()
			}
			s.writeError(c, err)
			return
		}
	}
	c.Header("Content-Type", "text/plain; charset=utf-8")
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Cache-Control", "no-store")
	c.Status(http.StatusOK)
	c.Writer.WriteHeaderNow()
	if err := lf.writeStart(c.Writer, old, tail); err != nil {
		s.streamError(c, id, err)
		return
	}
	c.Writer.Flush()
	if follow {
		s.followLog(c, id, lf)
	}
}

// followLog sends what is appended to the log until the job has ended
// and a poll after that found no more bytes, the client went away or the
// server is closing.
func (s *Server) followLog(c *gin.Context, id string, lf *logFile) {
	ctx := c.Request.Context()
	tick := time.NewTicker(s.logPoll)
	defer tick.Stop()
	ended := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case <-tick.C:
		}
		n, err := lf.drain(c.Writer)
		if err != nil {
			s.streamError(c, id, err)
			return
		}
		if n > 0 {
			c.Writer.Flush()
		} else if ended {
			return
		}
		job, err := s.node.Job(id)
		if err != nil {
			s.streamError(c, id, fmt.Errorf("follow: %w", err))
			return
		}
		// The next poll, one interval later, ends the stream if it reads
		// nothing: the writer may still flush the job's last output.
		ended = job.State.Terminal()
	}
}

// streamError logs an error met after the response started: the status
// is sent, so the client only sees the stream end. A client that went
// away is not an error.
func (s *Server) streamError(c *gin.Context, id string, err error) {
	if c.Request.Context().Err() != nil || errors.Is(err, context.Canceled) {
		return
	}
	s.log.Error("job log stream", "job", id, "err", err)
}

// logFile reads a job's log, following it across rotations: the writer
// renames PATH to PATH.1 and starts a new PATH.
type logFile struct {
	path string
	f    *os.File // the file being read; nil until PATH exists
}

// openStart opens PATH (if it exists) and PATH.1 (if it exists and is
// not PATH itself), the older first so that a rotation in between does
// not send a part twice.
func (l *logFile) openStart() (*os.File, error) {
	old, err := openIfExists(l.path + ".1")
	if err != nil {
		return nil, err
	}
	if err := l.open(); err != nil {
		if old != nil {
			old.Close()
		}
		return nil, err
	}
	if old != nil && l.f != nil {
		of, oerr := old.Stat()
		cf, cerr := l.f.Stat()
		if oerr == nil && cerr == nil && os.SameFile(of, cf) {
			old.Close()
			old = nil
		}
	}
	return old, nil
}

// writeStart writes the log's start: all that is kept (tail < 0) or its
// last tail bytes, reading the older part old if needed; old is closed.
func (l *logFile) writeStart(w io.Writer, old *os.File, tail int64) error {
	if old != nil {
		defer old.Close()
	}
	var size int64
	if l.f != nil {
		fi, err := l.f.Stat()
		if err != nil {
			return fmt.Errorf("job log: %w", err)
		}
		size = fi.Size()
	}
	if l.f != nil && tail >= 0 && tail <= size {
		if _, err := l.f.Seek(size-tail, io.SeekStart); err != nil {
			return fmt.Errorf("job log: %w", err)
		}
		return l.copy(w)
	}
	if old != nil {
		ofi, err := old.Stat()
		if err != nil {
			return fmt.Errorf("job log %s.1: %w", l.path, err)
		}
		from := int64(0)
		if tail >= 0 {
			from = max(0, ofi.Size()-(tail-size))
		}
		if _, err := old.Seek(from, io.SeekStart); err != nil {
			return fmt.Errorf("job log %s.1: %w", l.path, err)
		}
		if _, err := io.CopyN(w, old, ofi.Size()-from); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("job log %s.1: %w", l.path, err)
		}
	}
	return l.copy(w)
}

// tailOfLines is how many bytes at the end of the log (the rotated file
// old, then the current one) hold its last n lines: the bytes after the
// n-th newline from the end, the log's own last byte not counted as one
// (a last line without its newline is a line too).
func (l *logFile) tailOfLines(old *os.File, n int64) (int64, error) {
	if n == 0 {
		return 0, nil
	}
	var files []*os.File
	if old != nil {
		files = append(files, old)
	}
	if l.f != nil {
		files = append(files, l.f)
	}
	var tail int64
	buf := make([]byte, 64<<10)
	for i := len(files) - 1; i >= 0; i-- {
		fi, err := files[i].Stat()
		if err != nil {
			return 0, fmt.Errorf("job log: %w", err)
		}
		for end := fi.Size(); end > 0; end -= int64(len(buf)) {
			k := min(int64(len(buf)), end)
			if _, err := files[i].ReadAt(buf[:k], end-k); err != nil && !errors.Is(err, io.EOF) {
				return 0, fmt.Errorf("job log: %w", err)
			}
			for j := k - 1; j >= 0; j-- {
				if buf[j] == '\n' && tail > 0 {
					if n--; n == 0 {
						return tail, nil
					}
				}
				tail++
			}
		}
	}
	return tail, nil
}

// copy writes the open file from its position to its end.
func (l *logFile) copy(w io.Writer) error {
	if l.f == nil {
		return nil
	}
	if _, err := io.Copy(w, l.f); err != nil {
		return fmt.Errorf("job log: %w", err)
	}
	return nil
}

// drain writes what was appended since the last read and returns how
// many bytes. A file truncated in place is read again from its start; a
// rotated one is read to its end, then the new PATH from its start.
func (l *logFile) drain(w io.Writer) (int64, error) {
	var total int64
	for {
		if l.f == nil {
			if err := l.open(); err != nil || l.f == nil {
				return total, err
			}
		}
		fi, err := l.f.Stat()
		if err != nil {
			return total, fmt.Errorf("job log: %w", err)
		}
		pos, err := l.f.Seek(0, io.SeekCurrent)
		if err != nil {
			return total, fmt.Errorf("job log: %w", err)
		}
		if fi.Size() < pos {
			if _, err := l.f.Seek(0, io.SeekStart); err != nil {
				return total, fmt.Errorf("job log: %w", err)
			}
		}
		n, err := io.Copy(w, l.f)
		total += n
		if err != nil {
			return total, fmt.Errorf("job log: %w", err)
		}
		cur, err := os.Stat(l.path)
		if errors.Is(err, fs.ErrNotExist) {
			return total, nil // renamed; the new file is not there yet
		}
		if err != nil {
			return total, fmt.Errorf("job log: %w", err)
		}
		if os.SameFile(fi, cur) {
			return total, nil
		}
		// Rotated: what was written to the old file before the rename
		// comes first.
		n, err = io.Copy(w, l.f)
		total += n
		if err != nil {
			return total, fmt.Errorf("job log: %w", err)
		}
		l.close()
	}
}

func (l *logFile) open() error {
	f, err := openIfExists(l.path)
	if err != nil {
		return err
	}
	l.f = f
	return nil
}

func (l *logFile) close() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// openIfExists opens a file, returning nil if there is none.
func openIfExists(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("job log: %w", err)
	}
	return f, nil
}
