package unixsock

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestModeWhateverTheUmask: the socket has the mode asked for under any
// umask (a bound socket's mode otherwise comes from the umask: 0777 with
// umask 0), and replaces a stale socket but no other file.
func TestModeWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "s.sock")
	for range 2 { // the second replaces the first's socket
		ln, err := Listen(path, 0o600, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o600 || st.Mode()&os.ModeSocket == 0 {
			t.Fatalf("socket %v %v, want mode 0600", st.Mode(), err)
		}
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		ln.Close()
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file, 0o600, -1, -1); err == nil {
		t.Error("a regular file was replaced by a socket")
	}
}

// TestPeerCred: both ends of a connection read the other as this
// process, as the kernel recorded it.
func TestPeerCred(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := Listen(path, 0o600, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	want := Peer{PID: os.Getpid(), UID: os.Getuid(), GID: os.Getgid()}
	for name, c := range map[string]*net.UnixConn{"server": server, "client": client} {
		got, err := PeerCred(c)
		if err != nil || got != want {
			t.Errorf("%s side: PeerCred = %+v, %v; want %+v", name, got, err, want)
		}
	}
	client.Close()
	if _, err := PeerCred(client); err == nil {
		t.Error("PeerCred of a closed connection: want an error")
	}
}
