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

import "unsafe"

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
	advise(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s[:1]))), size))
}

// Make is make([]T, n, capacity) with Advise.
func Make[T any](n, capacity int) []T {
	s := make([]T, n, capacity)
	Advise(s)
	return s
}
