package httpapi

// ProgressReads is how many job reads the streams' progress events have made (events.go).
func (s *Server) ProgressReads() int64 { return s.progressReads.n.Load() }
