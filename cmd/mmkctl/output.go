package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"github.com/mmkgpu/mmk/jobs"
)

// printer writes results as aligned tables, indented JSON or YAML.
type printer struct {
	w io.Writer
	// json asks for the structured form: JSON, or YAML with yaml.
	json bool
	yaml bool
	// wide asks for the table's extra columns, where a command has them;
	// names for the jobs' ids alone, one a line (-o name: for scripts);
	// watching says --watch prints it (times, not ages: a row changes
	// when the job does).
	wide, names, watching bool
}

// namesOf writes the jobs' ids, one a line (-o name).
func (p printer) namesOf(list []jobs.Job) {
	for _, j := range list {
		p.Line("%s", j.ID)
	}
}

// JSON writes v as indented JSON, or as YAML with the same keys (the
// JSON's) where the printer is for -o yaml.
func (p printer) JSON(v any) error {
	if p.yaml {
		return writeYAML(p.w, v)
	}
	enc := json.NewEncoder(p.w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// Table writes rows under a header, columns aligned, each line indented.
func (p printer) Table(indent string, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, indent+strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, indent+strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// Line writes one line of text.
func (p printer) Line(format string, args ...any) {
	fmt.Fprintf(p.w, format+"\n", args...)
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeYAML writes v as YAML with JSON's field names and order: v is
// encoded as JSON (its tags decide), read back as a YAML node (JSON is
// YAML) and written in block style.
func writeYAML(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("write YAML: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("write YAML: %w", err)
	}
	blockStyle(&doc)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(4)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("write YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("write YAML: %w", err)
	}
	return nil
}

// blockStyle clears the flow style JSON's braces gave the nodes, and the
// quotes of strings that need none.
func blockStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle | yaml.DoubleQuotedStyle
	for _, c := range n.Content {
		blockStyle(c)
	}
}
