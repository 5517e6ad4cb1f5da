// Command cairn runs experiments and pipelines declared in HCL, caching
// every phase's outputs by content so that reruns are incremental and
// interruptions resumable.
//
// This package is the thin command-line layer: it parses flags, loads the
// spec, calls package engine and renders what comes back. See README.md
// for a tour of the commands.
package main

import "os"

func main() { os.Exit(Main()) }
