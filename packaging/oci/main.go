// Command oci writes a container image of static binaries on an empty
// base as an OCI image layout tar archive (packaging/internal/ociimage),
// offline: `make image` runs it for mmk-dra and mmkd. Load the archive with
// `ctr -n k8s.io images import FILE`, `docker load -i FILE` or
// `podman load -i FILE`.
//
//	go run ./packaging/oci --name mmk/mmk-dra --tag dev --version V \
//	  --file bin/static/mmk-dra:/usr/bin/mmk-dra --entrypoint /usr/bin/mmk-dra --out bin/mmk-dra-image.tar
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mmkgpu/mmk/internal/atomicfile"
	"github.com/mmkgpu/mmk/packaging/internal/ociimage"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "oci:", err)
		os.Exit(1)
	}
}

// fileList is the repeated --file SRC:DEST.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// run parses the arguments, writes the image and says what it wrote on
// log.
func run(args []string, log io.Writer) error {
	fs := flag.NewFlagSet("oci", flag.ContinueOnError)
	fs.SetOutput(log)
	var files fileList
	name := fs.String("name", "", "the image's repository, e.g. mmk/mmk-dra (required)")
	tag := fs.String("tag", "dev", "the image's tag")
	version := fs.String("version", "", "the binaries' version, the org.opencontainers.image.version label")
	entrypoint := fs.String("entrypoint", "", "the path in the image a container runs (required: one of the --file destinations)")
	out := fs.String("out", "", "the archive to write (required)")
	created := fs.Int64("created", 0, "the image's time in Unix seconds (default $SOURCE_DATE_EPOCH, else 0: the same bytes each build)")
	fs.Var(&files, "file", "SRC:DEST: the file SRC at the absolute path DEST in the image, executable (repeat)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" || *entrypoint == "" || *out == "" || len(files) == 0 {
		return errors.New("--name, --entrypoint, --out and at least one --file are required")
	}
	if *created == 0 {
		if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
			if _, err := fmt.Sscan(v, created); err != nil {
				return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", v, err)
			}
		}
	}
	img := ociimage.Image{
		Name: *name, Tag: *tag, Entrypoint: []string{*entrypoint}, WorkingDir: "/",
		Env:     []string{"PATH=/usr/bin:/bin"},
		Created: time.Unix(*created, 0),
		Labels: map[string]string{
			"org.opencontainers.image.title":   *name,
			"org.opencontainers.image.source":  "https://github.com/mmkgpu/mmk",
			"org.opencontainers.image.version": *version,
		},
	}
	for _, f := range files {
		src, dest, ok := strings.Cut(f, ":")
		if !ok || src == "" || dest == "" {
			return fmt.Errorf("--file %q: want SRC:DEST", f)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("--file %q: %w", f, err)
		}
		img.Files = append(img.Files, ociimage.File{Path: dest, Mode: 0o755, Data: data})
	}
	var b bytes.Buffer
	if err := ociimage.Write(&b, img); err != nil {
		return err
	}
	if err := atomicfile.Write(*out, b.Bytes()); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(log, "wrote %s (%s, %d MB): ctr -n k8s.io images import %s, or docker load -i %s\n", *out, img.Ref(), b.Len()>>20, *out, *out)
	return nil
}
