// Command hello stands for mmk's binaries in the image tool's test: a
// static binary that prints its version.
package main

import "os"

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		os.Stdout.WriteString("hello version " + version + "\n")
		return
	}
	os.Exit(2)
}

// version is stamped by the test (-ldflags -X main.version=...).
var version = "unset"
