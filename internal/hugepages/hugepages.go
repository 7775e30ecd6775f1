// Package hugepages asks the kernel to back the harness's largest arrays
// (a soak's operations, the tables that number them) with huge pages.
//
// A page of fresh memory costs a fault at its first touch, and on a
// virtual machine that fault is dear: about 30 µs for each 4 KiB page
// here, so that touching the 1 GB of a 10M-operation history's operations
// took 9 s of a 40 s check. Huge pages take one fault per 2 MiB. Go's
// runtime leaves the choice to the kernel, whose default on these
// machines ("madvise") gives huge pages only where asked.
package hugepages

import (
	"os"
	"unsafe"
)

// minBytes is the smallest array worth asking for: below a few huge pages
// the faults saved are few, and each call splits a mapping in the kernel.
const minBytes = 8 << 20

// Advise asks for huge pages under the whole capacity of s, where the
// system has them; elsewhere, and for a small s, it does nothing. It only
// advises: s's contents and the memory's lifetime are as before.
func Advise[T any](s []T) {
	var zero T
	size := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if size < minBytes {
		return
	}
	// The runtime starts a large array on one of its own pages, 8 KiB; a
	// kernel's pages may be larger (64 KiB on some arm64 and ppc64), and
	// madvise takes only a start on one of them.
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s[:1]))), size)
	page := uintptr(os.Getpagesize())
	skip := (page - uintptr(unsafe.Pointer(&b[0]))%page) % page
	if skip >= size {
		return
	}
	advise(b[skip:])
}
