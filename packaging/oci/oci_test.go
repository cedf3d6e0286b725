package main

import (
	"bytes"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mmkgpu/mmk/packaging/internal/ociimage"
)

// checkImage reads the image archive at path and checks what a runtime
// needs to run it: the entrypoint is a file of the layer, executable, a
// static ELF binary (the base is empty: no loader, no libc), and, taken
// out and run with --version, prints version. It returns the image.
func checkImage(t *testing.T, path, entrypoint, version string) *ociimage.Layout {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := ociimage.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	c := img.Config
	if !slices.Equal(c.Config.Entrypoint, []string{entrypoint}) || c.OS != "linux" || c.Architecture == "" {
		t.Fatalf("%s: config %+v: want entrypoint [%s], linux", path, c, entrypoint)
	}
	bin, ok := img.Files[entrypoint]
	if !ok || bin.Dir {
		t.Fatalf("%s: the layer has no file %s", path, entrypoint)
	}
	if bin.Mode&0o111 != 0o111 {
		t.Errorf("%s: %s has mode %v, not executable by all", path, entrypoint, bin.Mode)
	}
	e, err := elf.NewFile(bytes.NewReader(bin.Data))
	if err != nil {
		t.Fatalf("%s: %s is not an ELF binary: %v", path, entrypoint, err)
	}
	for _, p := range e.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s: %s is dynamically linked (it names a loader): the image has none", path, entrypoint)
		}
	}
	exe := filepath.Join(t.TempDir(), filepath.Base(entrypoint))
	if err := os.WriteFile(exe, bin.Data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != version {
		t.Errorf("%s: %s --version: %v, %q; want %q", path, entrypoint, err, out, version)
	}
	return img
}

// TestImageOfStaticBinary: the tool writes an image of a static binary
// that a runtime loads by its name and runs (issue 37, item 9).
func TestImageOfStaticBinary(t *testing.T) {
	dir := t.TempDir()
	hello := filepath.Join(dir, "hello")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version=1.2", "-o", hello, "./testdata/hello")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	archive := filepath.Join(dir, "hello.tar")
	if err := run([]string{"--name", "mmk/hello", "--tag", "dev", "--version", "1.2", "--file", hello + ":/usr/bin/hello",
		"--entrypoint", "/usr/bin/hello", "--out", archive}, io.Discard); err != nil {
		t.Fatal(err)
	}
	img := checkImage(t, archive, "/usr/bin/hello", "hello version 1.2")
	if img.RefName != "dev" || img.ImageName != "docker.io/mmk/hello:dev" || !slices.Equal(img.RepoTags, []string{"mmk/hello:dev"}) {
		t.Errorf("names %q %q %v", img.RefName, img.ImageName, img.RepoTags)
	}
	if v := img.Config.Config.Labels["org.opencontainers.image.version"]; v != "1.2" {
		t.Errorf("version label %q", v)
	}
	for _, args := range [][]string{
		{"--name", "mmk/hello", "--out", archive, "--entrypoint", "/usr/bin/hello"},
		{"--name", "mmk/hello", "--out", archive, "--entrypoint", "/usr/bin/hello", "--file", "nosuch:/usr/bin/hello"},
		{"--name", "mmk/hello", "--out", archive, "--entrypoint", "/usr/bin/hello", "--file", hello},
	} {
		if err := run(args, io.Discard); err == nil {
			t.Errorf("run %v: no error", args)
		}
	}
}

// TestBuiltImages checks the images `make image` built (it runs this test
// with MMK_IMAGE_DIR, the archives' folder, and MMK_IMAGE_VERSION, the
// binaries' version): mmk-dra's and mmkd's binaries run from the layer.
func TestBuiltImages(t *testing.T) {
	dir, version := os.Getenv("MMK_IMAGE_DIR"), os.Getenv("MMK_IMAGE_VERSION")
	if dir == "" || version == "" {
		t.Skip("set MMK_IMAGE_DIR and MMK_IMAGE_VERSION (make image does)")
	}
	for _, name := range []string{"mmk-dra", "mmkd"} {
		t.Run(name, func(t *testing.T) {
			checkImage(t, filepath.Join(dir, name+"-image.tar"), "/usr/bin/"+name, name+" version "+version)
		})
	}
}

// TestDaemonSetNamesTheImage: deployments/kubernetes/daemonset.yaml runs
// the image `make image` builds, by default (issue 37, item 9: it named
// mmk/mmk-dra:latest, which nothing built).
func TestDaemonSetNamesTheImage(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	cmd := exec.Command("make", "-n", "--no-print-directory", "image")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n image: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`--name (\S+) --tag (\S+) .*--out \S*mmk-dra-image\.tar`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("make -n image builds no mmk-dra-image.tar:\n%s", out)
	}
	built := string(m[1]) + ":" + string(m[2])
	data, err := os.ReadFile("../../deployments/kubernetes/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Image           string `yaml:"image"`
							ImagePullPolicy string `yaml:"imagePullPolicy"`
						}
					}
				}
			}
		}
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if doc.Kind != "DaemonSet" {
			continue
		}
		for _, c := range doc.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
			if c.ImagePullPolicy != "IfNotPresent" {
				t.Errorf("container %s: imagePullPolicy %q: want IfNotPresent (the image is loaded on the node, not pulled)", c.Image, c.ImagePullPolicy)
			}
		}
	}
	if !slices.Equal(images, []string{built}) {
		t.Errorf("the DaemonSet runs %v; make image builds %s", images, built)
	}
}
