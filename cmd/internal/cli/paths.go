package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/mmkgpu/mmk/configs"
)

// Where mmkd keeps what its clients need: both commands find them from
// the same configuration.
const (
	// SocketName is the API's Unix socket in the data directory.
	SocketName = "mmkd.sock"
	// TokenName is the file of the API's token in the data directory.
	TokenName = "token"
)

// rootDataDir is the data directory of an mmkd run as root, the
// machine's. A variable only so that a test binary can stand a directory
// of its own in for it (UseMachineDataDir).
var rootDataDir = "/var/lib/mmk"

// UseMachineDataDir makes dir stand for /var/lib/mmk, the machine's data
// directory (root's mmkd's), wherever a default leads there, and returns
// what undoes it. It is for a test binary's TestMain (clitest.Main),
// before any test runs, so that no test reads or writes the machine's
// state; nothing else calls it.
func UseMachineDataDir(dir string) (restore func()) {
	old := rootDataDir
	rootDataDir = dir
	return func() { rootDataDir = old }
}

// DataDir is the configured data directory, or the default: /var/lib/mmk
// for root, else ~/.local/state/mmk.
func DataDir(c *configs.Config) (string, error) {
	if c.DataDir != "" {
		return filepath.Abs(c.DataDir)
	}
	if os.Geteuid() == 0 {
		return rootDataDir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("data_dir is not set and there is no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "mmk"), nil
}

// SocketPath is the API's Unix socket: server.socket, else the data
// directory's; "" when server.socket is "none".
func SocketPath(c *configs.Config) (string, error) {
	switch c.Server.Socket {
	case "none":
		return "", nil
	case "":
		dir, err := DataDir(c)
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, SocketName), nil
	}
	return filepath.Abs(c.Server.Socket)
}

// ClientSocket is the socket a client (mmkctl) tries when no address is
// given: the configured one, or, for a user whose own data directory has
// no socket (no mmkd of theirs), root's mmkd's.
func ClientSocket(c *configs.Config) (string, error) {
	path, err := SocketPath(c)
	if err != nil || path == "" || c.Server.Socket != "" || c.DataDir != "" {
		return path, err
	}
	if _, err := os.Stat(path); err != nil && os.Geteuid() != 0 {
		return filepath.Join(rootDataDir, SocketName), nil
	}
	return path, nil
}

// Token is the API's token as a client reads it: server.token, else the
// one in the data directory; a missing one is "" and no error.
func Token(c *configs.Config) (string, error) {
	if c.Server.Token != "" {
		return c.Server.Token, nil
	}
	path, err := tokenPath(c)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("token file: %w", err)
	}
	return parseToken(path, data)
}

// ServerToken is the token mmkd serves with: server.token, else the one in
// the data directory, made there on the first start (32 random bytes in
// hex, 0600). An existing token file must be mmkd's user's alone: a
// regular file, not a symbolic link, owned by mmkd's uid (else mmkd
// refuses to start, naming the file, its owner and its mode); one that
// others may read or write (mode & 0o077) is made 0600 and log says so,
// naming the file and its old mode. The file is checked, fixed and read
// through one descriptor, so it cannot be swapped in between.
func ServerToken(c *configs.Config, log *slog.Logger) (string, error) {
	if c.Server.Token != "" {
		return c.Server.Token, nil
	}
	path, err := tokenPath(c)
	if err != nil {
		return "", err
	}
	tok, err := readOwnToken(path, log)
	if !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	tok = hex.EncodeToString(b[:])
	// O_EXCL: two mmkds starting at once on one data directory keep the
	// first one's token (the second stops at the store's lock anyway).
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readOwnToken(path, log)
	}
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	return tok, nil
}

// TokenFile is the file mmkd keeps its token in, as an absolute path:
// the data directory's token file, or "" where the token is the
// configuration's (server.token).
func TokenFile(c *configs.Config) (string, error) {
	if c.Server.Token != "" {
		return "", nil
	}
	path, err := tokenPath(c)
	if err != nil {
		return "", err
	}
	return filepath.Abs(path)
}

// tokenPath is the token file in the data directory.
func tokenPath(c *configs.Config) (string, error) {
	dir, err := DataDir(c)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, TokenName), nil
}

// parseToken is the token in a token file's data.
func parseToken(path string, data []byte) (string, error) {
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty: remove it and mmkd makes a new one", path)
	}
	return tok, nil
}

// readOwnToken reads an existing token file for mmkd (ServerToken): an
// error wrapping fs.ErrNotExist when there is none.
func readOwnToken(path string, log *slog.Logger) (string, error) {
	// O_NOFOLLOW: a link could point mmkd (root) at any file to chmod;
	// O_NONBLOCK: a FIFO planted there must not hang the start.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", fmt.Errorf("token file %s is a symbolic link: mmkd uses only a file of its own (remove it and mmkd makes a new one)", path)
	}
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	mode := fi.Mode()
	if !mode.IsRegular() {
		return "", fmt.Errorf("token file %s is not a regular file (%v): remove it and mmkd makes a new one", path, mode.Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("token file %s: no owner in its status", path)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return "", fmt.Errorf("token file %s is owned by %s, not by mmkd's user (uid %d), mode %#o: its owner could read or change mmkd's token; refusing to start (remove it and mmkd makes a new one, or chown it to uid %d and chmod it 0600)",
			path, uidName(st.Uid), uid, mode.Perm(), uid)
	}
	if old := mode.Perm(); old&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			return "", fmt.Errorf("token file %s has mode %#o (others may read it) and cannot be made 0600: %w", path, old, err)
		}
		log.Warn("the token file was open to other users: its mode is now 0600 (whoever read it before holds mmkd's token: remove the file and restart mmkd to make a new one)",
			"file", path, "oldMode", fmt.Sprintf("%#o", old))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	return parseToken(path, data)
}

// maxTokenFile bounds what mmkd reads of a token file.
const maxTokenFile = 4096

// uidName is "uid N (NAME)", or "uid N" for a uid without a name.
func uidName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return "uid " + id + " (" + u.Username + ")"
	}
	return "uid " + id
}
