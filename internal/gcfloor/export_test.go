package gcfloor

// OnTuned makes f run after each collection's tuning (f must not block), until the test ends.
func OnTuned(cleanup func(func()), f func()) {
	mu.Lock()
	afterTune = f
	mu.Unlock()
	cleanup(func() {
		mu.Lock()
		afterTune = nil
		mu.Unlock()
	})
}

// WithTrimFunc makes t call f instead of trimming.
func (t *Trimmer) WithTrimFunc(f func()) *Trimmer {
	t.trim = f
	return t
}
