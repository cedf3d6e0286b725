package kernelsched

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// A profile directory holds one profile file per task key, named by
// ProfilePath, so that the profiling phase of a new task key can add its
// profile while the kernel scheduler runs.

// ProfilePath is the file in dir that holds the profile of key: the key,
// escaped for a file name, with ".json".
func ProfilePath(dir, key string) (string, error) {
	if strings.TrimSpace(key) == "" {
		return "", errors.New("task key is empty")
	}
	return filepath.Join(dir, url.PathEscape(strings.ReplaceAll(key, ".", "%2E"))+".json"), nil
}

// LoadProfileDir reads every profile file (*.json) of dir.
func LoadProfileDir(dir string) ([]*TaskProfile, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("profile directory %s: %w", dir, err)
	}
	var out []*TaskProfile
	for _, f := range files {
		ps, err := LoadProfiles(f)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// LoadProfileFor reads the profile of key from dir; it returns nil and no
// error when the key has no profile there yet.
func LoadProfileFor(dir, key string) (*TaskProfile, error) {
	path, err := ProfilePath(dir, key)
	if err != nil {
		return nil, err
	}
	ps, err := LoadProfiles(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if p.Key == key {
			return p, nil
		}
	}
	return nil, fmt.Errorf("profile file %s holds no task %q", path, key)
}

// LoadProfilesFrom reads a profile file, or every profile file of a
// directory.
func LoadProfilesFrom(path string) ([]*TaskProfile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load profiles: %w", err)
	}
	if st.IsDir() {
		return LoadProfileDir(path)
	}
	return LoadProfiles(path)
}
