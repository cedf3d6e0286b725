package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helloBytes is a struct mmk_hello of the given priority and name.
func helloBytes(priority int, online bool, name string) []byte {
	b := make([]byte, helloSize)
	le := binary.LittleEndian
	le.PutUint32(b, ProtoMagic)
	le.PutUint16(b[4:], ProtoVersion)
	le.PutUint16(b[6:], helloSize)
	le.PutUint32(b[8:], uint32(os.Getpid()))
	le.PutUint32(b[12:], uint32(priority))
	if online {
		le.PutUint32(b[16:], 1)
	}
	copy(b[152:152+63], name)
	return b
}

// hookConn is a test's stand-in for a hook: it connects, says hello and
// reads the welcome, closing the descriptors that come with it; status
// is the welcome's.
func hookConn(t *testing.T, sock string, hello []byte) (c *net.UnixConn, status uint16) {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(hello); err != nil {
		t.Fatal(err)
	}
	w := make([]byte, welcomeSize)
	oob := make([]byte, unix.CmsgSpace(2*4))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, oobn, _, _, err := c.ReadMsgUnix(w, oob)
	if err != nil || n != welcomeSize {
		t.Fatalf("welcome: %d bytes, %v", n, err)
	}
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if fds, err := unix.ParseUnixRights(&m); err == nil {
				for _, fd := range fds {
					unix.Close(fd)
				}
			}
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, binary.LittleEndian.Uint16(w[6:])
}

// nameMsg is one name message.
func nameMsg(id uint32, name []byte) []byte {
	b := make([]byte, nameMsgSize, nameMsgSize+len(name))
	binary.LittleEndian.PutUint32(b, id)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(name)))
	return append(b, name...)
}

// TestNameCaps: a task that sends more kernel names than the hook ever
// numbers, or names longer than the caps (8,000 names of 64 KiB once
// took 682 MB of the server's), is dropped: its connection closes and
// the server keeps nothing of it. A task within the caps stays.
func TestNameCaps(t *testing.T) {
	s, sock := startServer(t, "fifo")
	big := bytes.Repeat([]byte("k"), maxNameLen)
	tests := []struct {
		name    string
		send    func(c *net.UnixConn) error
		dropped bool
	}{
		{"8,000 names of 64 KiB", func(c *net.UnixConn) error {
			for id := uint32(1); id <= 8000; id++ {
				if _, err := c.Write(nameMsg(id, big)); err != nil {
					return err
				}
			}
			return nil
		}, true},
		{"a name id the hook never uses", func(c *net.UnixConn) error {
			_, err := c.Write(nameMsg(maxNameID+1, []byte("k")))
			return err
		}, true},
		{"a name past the length cap", func(c *net.UnixConn) error {
			_, err := c.Write(nameMsg(1, append(big, 'x')))
			return err
		}, true},
		{"the same id sent again and again", func(c *net.UnixConn) error {
			for range 2000 {
				if _, err := c.Write(nameMsg(7, big)); err != nil {
					return err
				}
			}
			return nil
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, status := hookConn(t, sock, helloBytes(5, false, "names"))
			defer c.Close()
			if status != 0 {
				t.Fatalf("welcome status %d", status)
			}
			err := tt.send(c)
			if !tt.dropped {
				if err != nil {
					t.Fatal(err)
				}
				waitFor(t, func() bool { return s.Counters().Tasks == 1 })
				s.mu.Lock()
				var held int
				for _, tk := range s.tasks {
					for _, n := range tk.names {
						held += len(n)
					}
				}
				s.mu.Unlock()
				if held > maxNameLen {
					t.Errorf("one name sent again holds %d bytes", held)
				}
				c.Close()
				waitFor(t, func() bool { return s.Counters().Tasks == 0 })
				return
			}
			// Dropped: the server closes the connection (a write may fail
			// on the way) and forgets the task.
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the server kept the connection of a task past the caps: %v", err)
			}
			waitFor(t, func() bool { return s.Counters().Tasks == 0 })
		})
	}
}

// TestChurnLeavesNoTasks: 2,000 tasks connect and go; the server and its
// core keep none of them (dead tasks once piled up and slowed grants).
func TestChurnLeavesNoTasks(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "sched.sock")
	s, err := New(Config{Socket: sock, Policy: "guard", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	waitFor(t, func() bool { _, err := os.Stat(sock); return err == nil })
	for range 2000 {
		c, status := hookConn(t, sock, helloBytes(5, false, "churn"))
		if status != 0 {
			t.Fatalf("welcome status %d", status)
		}
		c.Close()
	}
	waitFor(t, func() bool { return s.Counters().Tasks == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The loop has stopped: its core may be read here.
	if n := len(s.core.Tasks()); n > 8 {
		t.Errorf("after 2,000 tasks came and went the core walks %d task slots", n)
	}
}

// TestSocketModeWhateverTheUmask: the server's socket is 0600 under any
// umask (it once took the umask's: 0777 under umask 0, where any user
// could connect and declare any priority).
func TestSocketModeWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	_, sock := startServer(t, "fifo")
	syscall.Umask(old)
	st, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", st.Mode().Perm())
	}
}

// TestIdentify: with Identify set, a task's priority, kind, key and name
// are those of the process the kernel names, whatever its hook declares;
// a process Identify does not know is refused.
func TestIdentify(t *testing.T) {
	var mu sync.Mutex
	var peers []Peer
	s, sock := startServerWith(t, Config{Policy: "fifo", Identify: func(p Peer) (Identity, error) {
		mu.Lock()
		defer mu.Unlock()
		peers = append(peers, p)
		if len(peers) > 1 {
			return Identity{}, errors.New("not a job of this instance")
		}
		return Identity{Priority: 7, Online: false, TaskKey: "train_bs8", Name: "train"}, nil
	}})
	c, status := hookConn(t, sock, helloBytes(0, true, "i-am-online"))
	defer c.Close()
	if status != 0 {
		t.Fatalf("welcome status %d", status)
	}
	waitFor(t, func() bool { return len(s.Tasks()) == 1 })
	if tv := s.Tasks()[0]; tv.Priority != 7 || tv.Online || tv.Name != "train" || tv.Key != "train_bs8" || tv.PID != os.Getpid() {
		t.Errorf("task %+v: want the identity's priority 7, offline, train_bs8, pid %d", tv, os.Getpid())
	}
	mu.Lock()
	if len(peers) != 1 || peers[0].PID != os.Getpid() || peers[0].UID != os.Getuid() {
		t.Errorf("Identify saw %+v", peers)
	}
	mu.Unlock()
	c2, status := hookConn(t, sock, helloBytes(0, true, "stranger"))
	defer c2.Close()
	if status == 0 {
		t.Error("a process Identify refused was welcomed")
	}
}

// TestUserSocket: Listen adds a socket of mode 0600 owned by the user it
// is for; tasks connect through it as through the server's own, and it
// goes with the server.
func TestUserSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a socket to another user")
	}
	s, sock := startServer(t, "fifo")
	user := filepath.Join(filepath.Dir(sock), "sched.65534.sock")
	if err := s.Listen(user, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(user)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if st.Mode().Perm() != 0o600 || sys.Uid != 65534 || sys.Gid != 65534 {
		t.Errorf("user socket mode %v owner %d:%d, want 0600 65534:65534", st.Mode().Perm(), sys.Uid, sys.Gid)
	}
	c, status := hookConn(t, user, helloBytes(5, false, "via-user-socket"))
	c.Close()
	if status != 0 {
		t.Errorf("welcome status %d through the user's socket", status)
	}
}

// FuzzTaskMessages: any bytes a task sends after its welcome (name
// messages, protocol step 5) are read without a panic, and what the
// server keeps stays within the caps: ids 1 to maxNameID, names of at
// most maxNameLen bytes, maxNameBytesTask in all.
func FuzzTaskMessages(f *testing.F) {
	f.Add(nameMsg(1, []byte("k")))
	f.Add(append(nameMsg(1, []byte("kernel_a")), nameMsg(2, []byte("kernel_b"))...))
	f.Add(nameMsg(0, nil))
	f.Add(nameMsg(maxNameID+1, []byte("x")))
	f.Add([]byte{1, 0, 0, 0, 255, 255, 255, 255})
	f.Add(nameMsg(3, []byte("short"))[:10])
	f.Fuzz(func(t *testing.T, b []byte) {
		var mu sync.Mutex
		nt := &nameTable{mu: &mu, names: map[uint32]string{}}
		err := readNames(bytes.NewReader(b), nt)
		total := 0
		for id, n := range nt.names {
			if id == 0 || id > maxNameID || len(n) > maxNameLen {
				t.Fatalf("kept name %d of %d bytes", id, len(n))
			}
			total += len(n)
		}
		if total > maxNameBytesTask || total != nt.bytes {
			t.Fatalf("kept %d bytes of names (counted %d)", total, nt.bytes)
		}
		if err != nil && strings.TrimSpace(err.Error()) == "" {
			t.Fatal("an error without a message")
		}
	})
}

// TestTaskPIDIsThePeers (issue 54, item 5): a task's process is the
// kernel's word for the connecting peer (SO_PEERCRED), whatever its
// hello declares: 0, -1, 1 or another process. Before, the standalone
// server's controller signalled the declared pid.
func TestTaskPIDIsThePeers(t *testing.T) {
	for _, declared := range []int32{0, -1, 1, int32(os.Getppid())} {
		t.Run(fmt.Sprint(declared), func(t *testing.T) {
			s, sock := startServer(t, "fifo")
			h := helloBytes(5, false, "liar")
			binary.LittleEndian.PutUint32(h[8:], uint32(declared))
			c, status := hookConn(t, sock, h)
			defer c.Close()
			if status != 0 {
				t.Fatalf("welcome status %d", status)
			}
			waitFor(t, func() bool { return len(s.Tasks()) == 1 })
			if got := s.Tasks()[0].PID; got != os.Getpid() {
				t.Errorf("task pid %d, want the peer's %d (declared %d)", got, os.Getpid(), declared)
			}
		})
	}
}
