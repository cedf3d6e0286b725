package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// printer writes results as aligned tables or indented JSON.
type printer struct {
	w    io.Writer
	json bool
	// wide asks for the table's extra columns, where a command has them.
	wide bool
}

// JSON writes v as indented JSON.
func (p printer) JSON(v any) error {
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
