// Package workers ships the reference workers inside the harness binary,
// so that an installed harness, far from its checkout, runs the catalog's
// rows that use them: Files are the workers by their path in the checkout.
package workers

import _ "embed"

//go:embed redis_py_lock.py
var redisPyLock []byte

// Files are the reference workers, by their path from the checkout's root.
var Files = map[string][]byte{"examples/workers/redis_py_lock.py": redisPyLock}
