package httpapi

// ProgressReads is how many job reads the streams' progress events have made (events.go).
func (s *Server) ProgressReads() int64 { return s.progressReads.n.Load() }

// SetAfterLogRead makes every job stream call hook between its read of the log and its read
// of the job (events.go's catchUp); nil removes it.
func (s *Server) SetAfterLogRead(hook func(jobID string)) {
	if hook == nil {
		s.afterLogRead.Store(nil)
		return
	}
	s.afterLogRead.Store(&hook)
}

// ProgressReadsHeld is how many jobs' reads the streams' progress events keep (events.go).
func (s *Server) ProgressReadsHeld() int {
	s.progressReads.mu.Lock()
	defer s.progressReads.mu.Unlock()
	return len(s.progressReads.reads)
}

// SetAfterProgressValue makes every stream call hook between taking a job's progress value
// and reading the job for its event (events.go's progress); nil removes it.
func (s *Server) SetAfterProgressValue(hook func(jobID, value string)) {
	if hook == nil {
		s.afterProgressValue.Store(nil)
		return
	}
	s.afterProgressValue.Store(&hook)
}
