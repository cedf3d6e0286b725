package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mmkgpu/mmk/configs"
)

// Where mmkd keeps what its clients need: both commands find them from
// the same configuration.
const (
	// SocketName is the API's Unix socket in the data directory.
	SocketName = "mmkd.sock"
	// TokenName is the file of the API's token in the data directory.
	TokenName = "token"
	// rootDataDir is the data directory of an mmkd run as root.
	rootDataDir = "/var/lib/mmk"
)

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

// Token is the API's token: server.token, else the one in the data
// directory. With create, a missing one is made there first (32 random
// bytes in hex, 0600), as mmkd does on its first start; without, a
// missing one is "" and no error.
func Token(c *configs.Config, create bool) (string, error) {
	if c.Server.Token != "" {
		return c.Server.Token, nil
	}
	dir, err := DataDir(c)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, TokenName)
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			return "", fmt.Errorf("token file %s is empty: remove it and mmkd makes a new one", path)
		}
		return tok, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("token file: %w", err)
	case !create:
		return "", nil
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	tok := hex.EncodeToString(b[:])
	// O_EXCL: two mmkds starting at once on one data directory keep the
	// first one's token (the second stops at the store's lock anyway).
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return Token(c, false)
	}
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("token file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", fmt.Errorf("token file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	return tok, nil
}
