package hugepages

import "golang.org/x/sys/unix"

func advise(b []byte) {
	// The array starts on a page (the runtime allocates large objects
	// whole pages at a time); the kernel rounds the end. An error (a
	// kernel without transparent huge pages) leaves things as they were.
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
}
