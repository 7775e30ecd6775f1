package hashslot

import "testing"

func TestOfMatchesRedis(t *testing.T) {
	// CLUSTER KEYSLOT's answers on Redis 7.0.15.
	for key, want := range map[string]int{"lock:orders": 9244, "{lock:orders}:fence": 9244, "foo": 12182,
		"{user1000}.following": 3443, "a{}b": 13694, "123456789": 12739} {
		if got := Of(key); got != want {
			t.Errorf("Of(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestBesideKeepsTheSlot(t *testing.T) {
	for key, want := range map[string]string{"lock:orders": "{lock:orders}:fence", "{a}b": "{a}b:fence", "x{y}z": "x{y}z:fence"} {
		got := Beside(key, ":fence")
		if got != want || Of(got) != Of(key) {
			t.Errorf("Beside(%q) = %q (slot %d, key's %d), want %q", key, got, Of(got), Of(key), want)
		}
	}
}
