package hugepages

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags are the kernel's flags for the mapping that holds addr.
func vmFlags(t *testing.T, addr uintptr) []string {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= addr && addr < hi
			continue
		}
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.Fields(rest)
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}

func TestAdviseAsksForHugePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are asked for on Linux only")
	}
	if mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(mode), "[never]") {
		t.Skip("this kernel gives no transparent huge pages")
	}
	big := make([]uint64, 0, 4<<20) // 32 MiB
	Advise(big)
	if flags := vmFlags(t, uintptr(unsafe.Pointer(unsafe.SliceData(big[:1])))+16<<20); !slices.Contains(flags, "hg") {
		t.Errorf("a 32 MiB array's mapping has flags %v, without hg (huge pages advised)", flags)
	}
	big = append(big, 1, 2, 3)
	if len(big) != 3 || big[2] != 3 {
		t.Errorf("the advised array holds %v", big)
	}
	runtime.KeepAlive(big)
}

func TestAdviseLeavesContentsAndEmptiesAlone(t *testing.T) {
	s := make([]int64, 3, 2<<20) // 16 MiB
	s[0], s[1], s[2] = 1, 2, 3
	Advise(s)
	if len(s) != 3 || cap(s) != 2<<20 || s[0] != 1 || s[2] != 3 {
		t.Errorf("advised, the array is %v (%d long, %d capacity)", s[:3], len(s), cap(s))
	}
	Advise([]int(nil))         // nothing to advise; must not panic
	Advise([]struct{}{{}, {}}) // nor a zero-size element
}
