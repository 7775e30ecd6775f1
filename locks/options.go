package locks

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Options are the options a lock spec gives its recipe: option name →
// value, "" for a flag. A spec is the recipe's name followed by options
// after a colon, separated by colons or commas:
//
//	redsync
//	redsync:setnx-on-extend
//	redsync:setnx-on-extend:tries=1
//	redsync:setnx-on-extend,tries=1
type Options map[string]string

// String spells the options canonically: sorted, colon-separated, as they
// follow the recipe name in a spec ("setnx-on-extend:tries=1").
func (o Options) String() string {
	var parts []string
	for k, v := range o {
		if v == "" {
			parts = append(parts, k)
		} else {
			parts = append(parts, k+"="+v)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ":")
}

// Flag reports whether the flag option is set.
func (o Options) Flag(name string) bool {
	_, ok := o[name]
	return ok
}

// OptionSpec is one option a recipe accepts.
type OptionSpec struct {
	Name string
	// Arg names the option's value ("N"); empty for a flag.
	Arg     string
	Summary string
}

// String is how the option is written in a spec: "tries=N", "setnx-on-extend".
func (s OptionSpec) String() string {
	if s.Arg == "" {
		return s.Name
	}
	return s.Name + "=" + s.Arg
}

// configurable is a recipe that takes options.
type configurable struct {
	specs []OptionSpec
	// build checks the option values and returns the recipe's
	// constructor with the options bound.
	build func(Options) (func(Config) Locker, error)
}

// configurables maps a recipe name to its options. Recipes not listed
// take none.
var configurables = map[string]configurable{
	redsyncRecipe.Name:     {redsyncOptions, buildRedsync},
	redislockRecipe.Name:   {redislockOptions, buildRedislock},
	rueidislockRecipe.Name: {rueidislockOptions, buildRueidislock},
}

// RecipeOptions lists the options the named recipe accepts (nil if none).
func RecipeOptions(name string) []OptionSpec {
	return configurables[name].specs
}

// ParseLock reads a lock spec: a recipe name, optionally followed by
// options (see Options). The returned recipe's New builds the locker with
// those options; Name stays the plain recipe name. Unknown options, flags
// given a value, options missing theirs and invalid values are errors
// naming the valid options.
func ParseLock(spec string) (Recipe, Options, error) {
	name, rest, hasOpts := strings.Cut(spec, ":")
	r, err := Lookup(name)
	if err != nil {
		return Recipe{}, nil, err
	}
	cfg, configurableRecipe := configurables[name]
	opts := Options{}
	if hasOpts {
		if !configurableRecipe {
			return Recipe{}, nil, fmt.Errorf("lock %q: %s takes no options", spec, name)
		}
		valid := validOptions(cfg.specs)
		items := strings.FieldsFunc(rest, func(c rune) bool { return c == ':' || c == ',' })
		if len(items) == 0 || strings.Contains(rest, "::") || strings.Contains(rest, ",,") ||
			strings.HasSuffix(rest, ":") || strings.HasSuffix(rest, ",") {
			return Recipe{}, nil, fmt.Errorf("lock %q: empty option (valid for %s: %s)", spec, name, valid)
		}
		for _, item := range items {
			k, v, hasValue := strings.Cut(item, "=")
			var os *OptionSpec
			for i := range cfg.specs {
				if cfg.specs[i].Name == k {
					os = &cfg.specs[i]
				}
			}
			switch {
			case os == nil:
				return Recipe{}, nil, fmt.Errorf("lock %q: unknown option %q for %s (valid: %s)", spec, k, name, valid)
			case os.Arg == "" && hasValue:
				return Recipe{}, nil, fmt.Errorf("lock %q: option %s is a flag and takes no value (valid for %s: %s)", spec, k, name, valid)
			case os.Arg != "" && (!hasValue || v == ""):
				return Recipe{}, nil, fmt.Errorf("lock %q: option %s needs a value: %s (valid for %s: %s)", spec, k, os, name, valid)
			}
			if _, dup := opts[k]; dup {
				return Recipe{}, nil, fmt.Errorf("lock %q: option %s given twice", spec, k)
			}
			opts[k] = v
		}
	}
	if configurableRecipe {
		build, err := cfg.build(opts)
		if err != nil {
			return Recipe{}, nil, fmt.Errorf("lock %q: %w (valid for %s: %s)", spec, err, name, validOptions(cfg.specs))
		}
		r.New = build
	}
	return r, opts, nil
}

func validOptions(specs []OptionSpec) string {
	var s []string
	for _, o := range specs {
		s = append(s, o.String())
	}
	return strings.Join(s, ", ")
}

// positiveInt reads option name's value as an integer ≥ 1; def when unset.
func positiveInt(o Options, name string, def int) (int, error) {
	v, ok := o[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("option %s=%s: want an integer ≥ 1", name, v)
	}
	return n, nil
}
