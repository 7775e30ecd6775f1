// Command harness is lockharness's CLI: it runs fault-injection scenarios
// against Redis locks, re-checks and reports recorded histories, and serves
// the store of past runs. Its body is package harness, so that other
// modules can build the same binary with recipes of their own.
package main

import (
	"os"

	"github.com/lockharness/lockharness/harness"
)

func main() {
	os.Exit(harness.Main(os.Args[1:]))
}
