package determinism

import (
	"fmt"
	"go/types"
	"strings"
)

//go:generate go run ../internal/mathscan/mkmathlist -o mathfuncs.go

// mathFunc is an entry of the generated mathFuncs: the GOARCHes on which
// a math function reaches assembly, and those on which it reaches Go code
// with multiply-adds the compiler may fuse.
type mathFunc struct{ asm, fma string }

// A kind of hazard, with why it breaks determinism and what to do instead
// (the trap table of docs/integration.md, section 2).
type kind struct {
	name, why, instead string
}

var (
	kMapRange = &kind{"maprange",
		"iteration order is randomised per run",
		"use an array, or range over slices.Sorted(maps.Keys(m))"}
	kTime = &kind{"time",
		"the wall clock differs per machine and per re-simulation",
		"count frames: f ticks of 1/60 s"}
	kRand = &kind{"rand",
		"the global generator is shared, seeded per process and not in the arena",
		"keep a generator's state in the arena, seeded from the match parameters"}
	kRandMethod = &kind{"rand",
		"a *rand.Rand keeps its state on the heap, outside the arena, so a rollback does not rewind it",
		"keep the generator's state in the arena (an rng.Rand or a rand.PCG in the world)"}
	kCryptoRand = &kind{"cryptorand",
		"it differs on every machine and every call",
		"keep a generator's state in the arena, seeded from the match parameters"}
	kGoroutine = &kind{"goroutine",
		"goroutine scheduling order is not deterministic",
		"simulate on one goroutine"}
	kChannel = &kind{"channel",
		"it waits on other goroutines, whose timing is not deterministic",
		"simulate on one goroutine, without channels"}
	kSelect = &kind{"select",
		"select picks a random ready case",
		"simulate on one goroutine, without channels"}
	kFMA = &kind{"fma",
		"the compiler may fuse it into one FMA instruction (" + fmaArches + "), which rounds differently",
		"convert the product, float64(x*y), or use fixed point"}
	kMath = &kind{"math",
		"its last bit may differ between platforms",
		"use fixed point (package fixed: Sin, Cos, Atan2, Sqrt) or a table"}
	kGlobal = &kind{"globalvar",
		"it is outside the arena, so a rollback does not restore it",
		"keep it in the arena, or make it a read-only table initialised at its declaration"}
	kUnsafe = &kind{"unsafe",
		"memory layout and addresses differ between platforms and between the live state and a snapshot",
		"use typed values in the arena"}
	kRuntime = &kind{"runtime",
		"it describes the machine and the process (cores, goroutines, memory, platform), which differ between players",
		"derive the value from the match parameters or the state"}
	kEnv = &kind{"env",
		"the environment, the host and the process differ between players' machines",
		"read configuration before the match and pass it in the match parameters"}
	kMapHash = &kind{"maphash",
		"hash/maphash seeds are random per process, so hashes differ between machines and runs",
		"use a fixed hash function (hash/fnv, or your own) over the state's bytes"}
	kAddress = &kind{"address",
		"addresses differ between machines, runs and a snapshot and the live state",
		"identify things by an index or an ID in the state"}
	kSyncPool = &kind{"syncpool",
		"what a sync.Pool hands back depends on the garbage collector and on other goroutines",
		"allocate in the arena, or keep a free list in the state"}
	kCapture = &kind{"capture",
		"the closure outlives the call that created the variable, so the variable is state outside the arena, which a rollback does not restore",
		"keep the state in the arena (a field of the world) and pass it in"}
	kFloatInt = &kind{"floatconv",
		"NaN, infinities and values out of the integer's range convert differently on each platform (amd64 gives the minimum integer, arm64 saturates, wasm traps)",
		"clamp the value into range and rule out NaN before converting, or use fixed point"}
	kNaNBits = &kind{"nanbits",
		"a NaN's payload and sign depend on the platform that made it (amd64 sets the sign bit, arm64 does not), so the bits differ though every value is NaN",
		"canonicalise first (if math.IsNaN(x) { x = math.NaN() }), or use fixed point"}
	kNarrow = &kind{"narrow",
		"int and uint are 32 bits on 386 and arm, so the high bits are lost there and kept elsewhere",
		"keep the value in int64 (or int32 when it fits) instead of int"}
	kFloat = &kind{"float",
		"-nofloat forbids floating point in the simulation",
		"use fixed point (package fixed)"}
	kAllow = &kind{"allow",
		"an exemption must say why the code is deterministic",
		"write //rewind:allow <reason>"}
)

// timeFuncs are the functions of package time that read or wait on the
// wall clock.
var timeFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true,
	"After": true, "AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true, "Sleep": true,
}

// randConstructors are the top-level functions of math/rand and
// math/rand/v2 that only build a generator from a seed: deterministic.
var randConstructors = map[string]bool{
	"New": true, "NewSource": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true,
}

// runtimeFuncs are the functions of package runtime whose result
// depends on the machine or the process.
var runtimeFuncs = map[string]bool{
	"NumGoroutine": true, "NumCPU": true, "GOMAXPROCS": true, "NumCgoCall": true,
	"ReadMemStats": true, "GOROOT": true, "Version": true, "Callers": true, "Caller": true,
	"Stack": true, "MemProfile": true,
}

// envFuncs are the functions of os (and syscall) that read the
// environment, the host or the process.
var envFuncs = map[string]bool{
	"Getenv": true, "LookupEnv": true, "Environ": true, "ExpandEnv": true,
	"Hostname": true, "Getpid": true, "Getppid": true, "Getuid": true, "Geteuid": true,
	"Getgid": true, "Getegid": true, "Getgroups": true, "Getwd": true, "Executable": true,
	"TempDir": true, "UserHomeDir": true, "UserCacheDir": true, "UserConfigDir": true,
	"Getpagesize": true,
}

// sorters are the functions of package slices that turn an iterator into a
// sorted slice: maps.Keys inside one is deterministic.
var sorters = map[string]bool{"Sorted": true, "SortedFunc": true, "SortedStableFunc": true}

// identity returns the hazard of using the standard library's fn, if it
// is one of the listed ones. why and instead override the kind's when not
// empty.
func identity(fn *types.Func) (k *kind, noun, why string, ok bool) {
	pkg := fn.Pkg()
	if pkg == nil {
		return nil, "", "", false
	}
	sig, _ := fn.Type().(*types.Signature)
	if sig == nil {
		return nil, "", "", false
	}
	path, name := pkg.Path(), fn.Name()
	if recv := sig.Recv(); recv != nil {
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		n, ok := types.Unalias(t).(*types.Named)
		if !ok {
			return nil, "", "", false
		}
		tn := n.Obj().Name()
		switch path {
		case "math/rand", "math/rand/v2":
			if tn == "Rand" || tn == "Zipf" {
				return kRandMethod, fmt.Sprintf("(*rand.%s).%s", tn, name), "", true
			}
		case "hash/maphash":
			return kMapHash, fmt.Sprintf("(*maphash.%s).%s", tn, name), "", true
		case "sync":
			switch {
			case tn == "Map" && name == "Range":
				return kMapRange, "(*sync.Map).Range", "it visits the entries in an unspecified order", true
			case tn == "Pool":
				return kSyncPool, "(*sync.Pool)." + name, "", true
			}
		case "reflect":
			if tn != "Value" && tn != "MapIter" {
				break
			}
			switch name {
			case "MapRange", "MapKeys", "Seq", "Seq2":
				return kMapRange, "reflect.Value." + name, "it visits a map in its randomised order (a Seq or Seq2 of a map too)", true
			case "Pointer", "UnsafePointer", "UnsafeAddr":
				return kAddress, "reflect.Value." + name, "", true
			}
		}
		return nil, "", "", false
	}
	switch path {
	case "time":
		if timeFuncs[name] {
			return kTime, "time." + name, "", true
		}
	case "math/rand", "math/rand/v2":
		if !randConstructors[name] {
			return kRand, "rand." + name, "", true
		}
	case "crypto/rand":
		return kCryptoRand, "crypto/rand." + name, "", true
	case "runtime":
		if runtimeFuncs[name] {
			return kRuntime, "runtime." + name, "", true
		}
	case "os", "syscall":
		if envFuncs[name] {
			return kEnv, pkg.Name() + "." + name, "", true
		}
	case "hash/maphash":
		return kMapHash, "maphash." + name, "", true
	case "math":
		if m, ok := mathFuncs[name]; ok {
			return kMath, "math." + name, mathWhy(m), true
		}
	}
	return nil, "", "", false
}

// mathWhy says where a math function's result depends on the platform.
func mathWhy(m mathFunc) string {
	var parts []string
	if m.asm != "" {
		parts = append(parts, "it is assembly on "+m.asm)
	}
	if m.fma != "" {
		parts = append(parts, "its Go code has multiply-adds the compiler may fuse on "+m.fma)
	}
	return strings.Join(parts, " and ") + ", so its last bit may differ between platforms"
}
