package locks

import (
	"fmt"

	"github.com/lockharness/lockharness/internal/options"
)

// Lock is a recipe with the options a lock spec gave it: what --lock names.
// A spec is the recipe's name, optionally followed by options after a
// colon, separated by colons or commas:
//
//	redsync
//	redsync:setnx-on-extend
//	redsync:setnx-on-extend:tries=1
//	redsync:setnx-on-extend,tries=1
type Lock struct {
	Recipe
	Options options.Values
}

// String spells the lock canonically: "redsync:setnx-on-extend:tries=1".
func (l Lock) String() string { return l.Options.With(l.Name) }

// NewLocker builds the recipe's locker with the lock's options.
func (l Lock) NewLocker(c Config) Locker {
	c.Options = l.Options
	return l.Recipe.New(c)
}

// ParseLock reads a lock spec. Unknown recipes and options, flags given a
// value, options missing theirs and invalid values are errors naming the
// valid ones.
func ParseLock(spec string) (Lock, error) {
	name, rest, hasOpts := options.Split(spec)
	r, err := Lookup(name)
	if err != nil {
		return Lock{}, err
	}
	l := Lock{Recipe: r, Options: options.Values{}}
	if !hasOpts {
		return l, nil
	}
	if len(r.Options) == 0 {
		return Lock{}, fmt.Errorf("lock %q: %s takes no options", spec, name)
	}
	if l.Options, err = options.Parse(rest, r.Options); err != nil {
		return Lock{}, fmt.Errorf("lock %q: %s: %w", spec, name, err)
	}
	return l, nil
}
