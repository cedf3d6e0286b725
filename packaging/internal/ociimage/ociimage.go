// Package ociimage writes a container image of a few files (static
// binaries) on an empty base as an OCI image layout in a tar archive,
// and reads one back. No base image is pulled and nothing but the Go
// standard library is used, so `make image` builds offline.
//
// The archive holds what the OCI image layout specification asks
// (oci-layout, index.json, blobs/sha256/...: one gzipped layer, the
// image config and the manifest), which containerd (`ctr images import`),
// podman, skopeo and docker 25+ load, and docker's manifest.json beside
// it, which every docker load reads. Writing the same image twice gives
// the same bytes: file times are the image's Created, owners root, the
// gzip header empty.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Media types of the OCI image specification.
const (
	MediaTypeIndex     = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest  = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig    = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Annotations that name an image of a layout: the OCI tag, and the full
// reference containerd (and docker 25+) names the imported image by.
const (
	AnnotationRefName       = "org.opencontainers.image.ref.name"
	AnnotationContainerName = "io.containerd.image.name"
)

// File is a regular file of the image.
type File struct {
	// Path is absolute: /usr/bin/mmk-dra.
	Path string
	Mode fs.FileMode
	Data []byte
}

// Image is what Write writes: its name and tag, files (their parent
// directories are added) and the config a runtime starts it with.
type Image struct {
	// Name is the repository, "mmk/mmk-dra"; Tag the tag, "dev".
	Name, Tag  string
	Files      []File
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	Labels     map[string]string
	// OS and Architecture default to linux and the building Go's GOARCH.
	OS, Architecture string
	// Created is the image's and its files' time (zero: 1970-01-01).
	Created time.Time
}

// Ref is the image's reference, NAME:TAG.
func (img Image) Ref() string { return img.Name + ":" + img.Tag }

// Descriptor points at a blob.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *Platform         `json:"platform,omitempty"`
}

// Platform is a manifest's OS and architecture.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// Manifest is an image manifest.
type Manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        Descriptor   `json:"config"`
	Layers        []Descriptor `json:"layers"`
}

// Config is an image configuration.
type Config struct {
	Created      string          `json:"created,omitempty"`
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Config       ContainerConfig `json:"config"`
	RootFS       RootFS          `json:"rootfs"`
	History      []History       `json:"history,omitempty"`
}

// ContainerConfig is what a container of the image runs.
type ContainerConfig struct {
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

// RootFS lists the layers' uncompressed digests.
type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// History says how a layer was made.
type History struct {
	Created   string `json:"created,omitempty"`
	CreatedBy string `json:"created_by,omitempty"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// dockerManifest is an entry of docker's manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// nameRE and tagRE are the reference grammar's repository path and tag
// (github.com/distribution/reference).
var (
	nameRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	tagRE  = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
)

// Tag turns a version (packaging/version.sh: 0.0~git20261126.abc1234)
// into a valid image tag: each character a tag may not hold becomes "-".
func Tag(version string) string {
	b := []byte(version)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || (i > 0 && (c == '.' || c == '-'))) {
			b[i] = '-'
		}
	}
	return string(b)
}

// Write writes img as an OCI image layout tar archive to w.
func Write(w io.Writer, img Image) error {
	if err := img.check(); err != nil {
		return err
	}
	if img.OS == "" {
		img.OS = "linux"
	}
	if img.Architecture == "" {
		img.Architecture = runtime.GOARCH
	}
	created := img.Created.UTC()
	if created.IsZero() {
		created = time.Unix(0, 0).UTC()
	}
	layer, diffID, err := img.layer(created)
	if err != nil {
		return err
	}
	cfg := Config{
		Created: created.Format(time.RFC3339), Architecture: img.Architecture, OS: img.OS,
		Config:  ContainerConfig{Entrypoint: img.Entrypoint, Cmd: img.Cmd, Env: img.Env, WorkingDir: img.WorkingDir, Labels: img.Labels},
		RootFS:  RootFS{Type: "layers", DiffIDs: []string{diffID}},
		History: []History{{Created: created.Format(time.RFC3339), CreatedBy: "mmk internal/ociimage: " + strings.Join(img.paths(), " ")}},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("image %s: config: %w", img.Ref(), err)
	}
	m := Manifest{SchemaVersion: 2, MediaType: MediaTypeManifest,
		Config: descriptor(MediaTypeConfig, cfgJSON), Layers: []Descriptor{descriptor(MediaTypeLayerGzip, layer)}}
	mJSON, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("image %s: manifest: %w", img.Ref(), err)
	}
	md := descriptor(MediaTypeManifest, mJSON)
	md.Annotations = map[string]string{AnnotationRefName: img.Tag, AnnotationContainerName: "docker.io/" + img.Ref()}
	md.Platform = &Platform{Architecture: img.Architecture, OS: img.OS}
	idx, err := json.Marshal(index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []Descriptor{md}})
	if err != nil {
		return fmt.Errorf("image %s: index: %w", img.Ref(), err)
	}
	docker, err := json.Marshal([]dockerManifest{{Config: blobPath(m.Config.Digest), RepoTags: []string{img.Ref()}, Layers: []string{blobPath(m.Layers[0].Digest)}}})
	if err != nil {
		return fmt.Errorf("image %s: manifest.json: %w", img.Ref(), err)
	}

	tw := tar.NewWriter(w)
	for _, d := range []string{"blobs", "blobs/sha256"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: created, Format: tar.FormatPAX}); err != nil {
			return fmt.Errorf("image %s: %w", img.Ref(), err)
		}
	}
	for _, e := range []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", idx},
		{"manifest.json", docker},
		{blobPath(m.Layers[0].Digest), layer},
		{blobPath(m.Config.Digest), cfgJSON},
		{blobPath(md.Digest), mJSON},
	} {
		if err := writeFile(tw, e.name, 0o644, e.data, created); err != nil {
			return fmt.Errorf("image %s: %w", img.Ref(), err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("image %s: %w", img.Ref(), err)
	}
	return nil
}

// check refuses what a runtime would: a bad name or tag, a relative or
// repeated path, an entrypoint the image does not hold.
func (img Image) check() error {
	if !nameRE.MatchString(img.Name) {
		return fmt.Errorf("image name %q: want lower-case path components such as mmk/mmk-dra", img.Name)
	}
	if !tagRE.MatchString(img.Tag) {
		return fmt.Errorf("image tag %q: want letters, digits, _ . - (at most 128, not starting with . or -)", img.Tag)
	}
	if len(img.Files) == 0 {
		return fmt.Errorf("image %s: no files", img.Ref())
	}
	seen := map[string]bool{}
	for _, f := range img.Files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return fmt.Errorf("image %s: file path %q is not absolute and clean", img.Ref(), f.Path)
		}
		if seen[f.Path] {
			return fmt.Errorf("image %s: file %s given twice", img.Ref(), f.Path)
		}
		seen[f.Path] = true
	}
	if len(img.Entrypoint) > 0 && !seen[img.Entrypoint[0]] {
		return fmt.Errorf("image %s: entrypoint %s is not a file of the image", img.Ref(), img.Entrypoint[0])
	}
	return nil
}

// paths are the image's files' paths.
func (img Image) paths() []string {
	var out []string
	for _, f := range img.Files {
		out = append(out, f.Path)
	}
	return out
}

// layer is the gzipped tar of the image's files and their parent
// directories, and the uncompressed tar's digest (the diff id).
func (img Image) layer(created time.Time) ([]byte, string, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	dirs := map[string]bool{}
	files := slices.Clone(img.Files)
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range files {
		rel := strings.TrimPrefix(f.Path, "/")
		var parents []string
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			parents = append(parents, d)
		}
		slices.Reverse(parents)
		for _, d := range parents {
			if dirs[d] {
				continue
			}
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: created, Format: tar.FormatPAX}); err != nil {
				return nil, "", fmt.Errorf("image %s: layer: %w", img.Ref(), err)
			}
		}
		if err := writeFile(tw, rel, int64(f.Mode.Perm()), f.Data, created); err != nil {
			return nil, "", fmt.Errorf("image %s: layer: %w", img.Ref(), err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", fmt.Errorf("image %s: layer: %w", img.Ref(), err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz) // a header without name or time
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", fmt.Errorf("image %s: layer: %w", img.Ref(), err)
	}
	if err := zw.Close(); err != nil {
		return nil, "", fmt.Errorf("image %s: layer: %w", img.Ref(), err)
	}
	return gz.Bytes(), digest(raw.Bytes()), nil
}

func writeFile(tw *tar.Writer, name string, mode int64, data []byte, t time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: t, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func descriptor(mediaType string, b []byte) Descriptor {
	return Descriptor{MediaType: mediaType, Digest: digest(b), Size: int64(len(b))}
}

// blobPath is where the layout keeps the blob of a digest.
func blobPath(d string) string { return "blobs/" + strings.Replace(d, ":", "/", 1) }

// LayerFile is an entry of the image's layers.
type LayerFile struct {
	Dir  bool
	Mode fs.FileMode
	Data []byte
}

// Layout is an image read back from an archive: its names, manifest
// and config, and the entries of its layers by absolute path (a later
// layer's entry over an earlier one's).
type Layout struct {
	// RefName and ImageName are index.json's names of the image (OCI
	// ref.name, containerd's image name); RepoTags manifest.json's.
	RefName, ImageName string
	RepoTags           []string
	Manifest           Manifest
	Config             Config
	Files              map[string]LayerFile
}

// Read reads an OCI image layout tar archive of one image from r, as
// Write writes it, checking every blob against its descriptor's digest
// and size and each layer against the config's diff id.
func Read(r io.Reader) (*Layout, error) {
	entries := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read image archive: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read image archive: %s: %w", h.Name, err)
		}
		entries[path.Clean(h.Name)] = b
	}
	if _, ok := entries["oci-layout"]; !ok {
		return nil, errors.New("read image archive: no oci-layout: not an OCI image layout")
	}
	var idx index
	if err := json.Unmarshal(entries["index.json"], &idx); err != nil {
		return nil, fmt.Errorf("read image archive: index.json: %w", err)
	}
	if len(idx.Manifests) != 1 || idx.Manifests[0].MediaType != MediaTypeManifest {
		return nil, fmt.Errorf("read image archive: index.json lists %d manifests, want one image manifest", len(idx.Manifests))
	}
	out := &Layout{RefName: idx.Manifests[0].Annotations[AnnotationRefName], ImageName: idx.Manifests[0].Annotations[AnnotationContainerName], Files: map[string]LayerFile{}}
	blob := func(d Descriptor) ([]byte, error) {
		b, ok := entries[blobPath(d.Digest)]
		switch {
		case !ok:
			return nil, fmt.Errorf("read image archive: no blob %s", d.Digest)
		case digest(b) != d.Digest:
			return nil, fmt.Errorf("read image archive: blob %s has the digest %s", d.Digest, digest(b))
		case int64(len(b)) != d.Size:
			return nil, fmt.Errorf("read image archive: blob %s has %d bytes, its descriptor says %d", d.Digest, len(b), d.Size)
		}
		return b, nil
	}
	mb, err := blob(idx.Manifests[0])
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(mb, &out.Manifest); err != nil {
		return nil, fmt.Errorf("read image archive: manifest: %w", err)
	}
	cb, err := blob(out.Manifest.Config)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(cb, &out.Config); err != nil {
		return nil, fmt.Errorf("read image archive: config: %w", err)
	}
	if len(out.Config.RootFS.DiffIDs) != len(out.Manifest.Layers) {
		return nil, fmt.Errorf("read image archive: %d layers, %d diff ids", len(out.Manifest.Layers), len(out.Config.RootFS.DiffIDs))
	}
	for i, l := range out.Manifest.Layers {
		if l.MediaType != MediaTypeLayerGzip {
			return nil, fmt.Errorf("read image archive: layer %s: media type %s", l.Digest, l.MediaType)
		}
		lb, err := blob(l)
		if err != nil {
			return nil, err
		}
		if err := out.readLayer(lb, out.Config.RootFS.DiffIDs[i]); err != nil {
			return nil, fmt.Errorf("read image archive: layer %s: %w", l.Digest, err)
		}
	}
	if dm, ok := entries["manifest.json"]; ok {
		var docker []dockerManifest
		if err := json.Unmarshal(dm, &docker); err != nil {
			return nil, fmt.Errorf("read image archive: manifest.json: %w", err)
		}
		for _, d := range docker {
			out.RepoTags = append(out.RepoTags, d.RepoTags...)
		}
	}
	return out, nil
}

// readLayer adds a gzipped layer's entries, checking its diff id.
func (l *Layout) readLayer(gz []byte, diffID string) error {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return err
	}
	if digest(raw) != diffID {
		return fmt.Errorf("uncompressed digest %s, the config's diff id %s", digest(raw), diffID)
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := "/" + strings.TrimSuffix(path.Clean(h.Name), "/")
		switch h.Typeflag {
		case tar.TypeDir:
			l.Files[p] = LayerFile{Dir: true, Mode: fs.FileMode(h.Mode).Perm()}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			l.Files[p] = LayerFile{Mode: fs.FileMode(h.Mode).Perm(), Data: b}
		}
	}
}
