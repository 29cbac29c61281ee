package desync

// MaxMarks is how many marks one step records; later ones are ignored.
const MaxMarks = 16

// Marks lets a game name its systems inside its Step, so that a desync
// names the first system whose output differs, not only the field. The
// game calls [Marks.Mark] after each system with the system's name (a
// constant string); a session (rollback's Config.Marks) traces the steps
// it needs to compare, hashing the state at each mark. When no trace is
// on, Mark costs a nil check and a branch. The zero value is ready to
// use; a nil *Marks is too (Mark does nothing).
type Marks struct {
	hash  func() uint64 // nil: no trace
	names [MaxMarks]string
	sums  [MaxMarks]uint64
	n     int
}

// Mark notes that the system named system has just run: while a trace is
// on, the hash of the state now.
func (m *Marks) Mark(system string) {
	if m == nil || m.hash == nil || m.n == MaxMarks {
		return
	}
	m.names[m.n], m.sums[m.n] = system, m.hash()
	m.n++
}

// Trace starts a trace of one step: each Mark until [Marks.Stop] records
// hash(), the state's hash after that system.
func (m *Marks) Trace(hash func() uint64) {
	if m != nil {
		m.hash, m.n = hash, 0
	}
}

// Stop ends the trace and returns it.
func (m *Marks) Stop() Trace {
	if m == nil {
		return Trace{}
	}
	m.hash = nil
	return Trace{names: m.names, sums: m.sums, n: m.n}
}

// Trace is one step's marks: each system's name and the state's hash after
// it, in order.
type Trace struct {
	names [MaxMarks]string
	sums  [MaxMarks]uint64
	n     int
}

// Len returns the number of marks.
func (t Trace) Len() int { return t.n }

// At returns mark i's system and the state's hash after it.
func (t Trace) At(i int) (system string, sum uint64) { return t.names[i], t.sums[i] }

// FirstDiff names the first system after which the two traces of one step
// differ: the system whose output differs first. ok is false when the
// traces agree at every mark they share (the difference came after the
// last mark, or there are no marks), or mark different systems.
func FirstDiff(a, b Trace) (system string, ok bool) {
	for i := range min(a.n, b.n) {
		if a.names[i] != b.names[i] {
			return "", false
		}
		if a.sums[i] != b.sums[i] {
			return a.names[i], true
		}
	}
	return "", false
}
