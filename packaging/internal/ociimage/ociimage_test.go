package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func testImage() Image {
	return Image{
		Name: "mmk/mmk-dra", Tag: "dev",
		Files:      []File{{Path: "/usr/bin/mmk-dra", Mode: 0o755, Data: []byte("#!binary\n")}, {Path: "/etc/mmk/README", Mode: 0o644, Data: []byte("hi")}},
		Entrypoint: []string{"/usr/bin/mmk-dra"},
		Env:        []string{"PATH=/usr/bin:/bin"},
		Labels:     map[string]string{"org.opencontainers.image.version": "1.2"},
		Created:    time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC),
	}
}

// TestWriteRead: what Write writes reads back with every blob's digest
// and size right, the config and files as given, and the names a runtime
// loads it by: index.json's ref.name (OCI) and io.containerd.image.name
// (containerd, docker 25+), manifest.json's RepoTags (docker load).
func TestWriteRead(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, testImage()); err != nil {
		t.Fatal(err)
	}
	img, err := Read(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if img.RefName != "dev" || img.ImageName != "docker.io/mmk/mmk-dra:dev" || !slices.Equal(img.RepoTags, []string{"mmk/mmk-dra:dev"}) {
		t.Errorf("names: ref.name %q, image name %q, RepoTags %v", img.RefName, img.ImageName, img.RepoTags)
	}
	c := img.Config
	if c.OS != "linux" || c.Architecture == "" || !slices.Equal(c.Config.Entrypoint, []string{"/usr/bin/mmk-dra"}) ||
		c.Config.Labels["org.opencontainers.image.version"] != "1.2" || !slices.Equal(c.Config.Env, []string{"PATH=/usr/bin:/bin"}) {
		t.Errorf("config: %+v", c)
	}
	if len(img.Manifest.Layers) != 1 || img.Manifest.Layers[0].MediaType != MediaTypeLayerGzip || len(c.RootFS.DiffIDs) != 1 {
		t.Errorf("manifest %+v, rootfs %+v", img.Manifest, c.RootFS)
	}
	f, ok := img.Files["/usr/bin/mmk-dra"]
	if !ok || string(f.Data) != "#!binary\n" || f.Mode != 0o755 {
		t.Errorf("/usr/bin/mmk-dra in the layer: %+v (%v)", f, ok)
	}
	for _, dir := range []string{"/usr", "/usr/bin", "/etc", "/etc/mmk"} {
		if d, ok := img.Files[dir]; !ok || !d.Dir {
			t.Errorf("layer lacks the directory %s", dir)
		}
	}
	// The same image twice is the same archive (no time or order of the
	// machine in it).
	var again bytes.Buffer
	if err := Write(&again, testImage()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), again.Bytes()) {
		t.Error("two writes of the same image differ")
	}
}

// TestReadChecksDigests: a blob whose content does not match its digest
// is refused.
func TestReadChecksDigests(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, testImage()); err != nil {
		t.Fatal(err)
	}
	// Rewrite the archive with the config blob changed.
	var out bytes.Buffer
	tr, tw := tar.NewReader(&b), tar.NewWriter(&out)
	var index struct {
		Manifests []Descriptor `json:"manifests"`
	}
	entries := map[string][]byte{}
	var order []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		entries[h.Name] = data
		order = append(order, h.Name)
	}
	if err := json.Unmarshal(entries["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(entries[blobPath(index.Manifests[0].Digest)], &m); err != nil {
		t.Fatal(err)
	}
	cfg := blobPath(m.Config.Digest)
	entries[cfg] = bytes.Replace(entries[cfg], []byte("/usr/bin/mmk-dra"), []byte("/usr/bin/mmk-drb"), 1)
	for _, name := range order {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(entries[name])), Typeflag: tar.TypeReg})
		tw.Write(entries[name])
	}
	tw.Close()
	if _, err := Read(bytes.NewReader(out.Bytes())); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("Read of a changed config: %v, want a digest mismatch", err)
	}
}

// TestWriteRefusesBadImages: names a runtime would refuse, relative
// paths and an entrypoint the image does not hold are errors.
func TestWriteRefusesBadImages(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Image)
		want string
	}{
		{"bad tag", func(i *Image) { i.Tag = "0.0~git" }, "tag"},
		{"bad name", func(i *Image) { i.Name = "MMK/dra" }, "name"},
		{"relative path", func(i *Image) { i.Files[0].Path = "usr/bin/x" }, "absolute"},
		{"missing entrypoint", func(i *Image) { i.Entrypoint = []string{"/bin/sh"} }, "entrypoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := testImage()
			tc.edit(&img)
			if err := Write(io.Discard, img); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Write = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestTag: a version of packaging/version.sh becomes a valid tag.
func TestTag(t *testing.T) {
	for in, want := range map[string]string{"0.0~git20261126.abc1234": "0.0-git20261126.abc1234", "1.2.3": "1.2.3", "1.0+dirty": "1.0-dirty"} {
		if got := Tag(in); got != want {
			t.Errorf("Tag(%q) = %q, want %q", in, got, want)
		}
	}
}
