package pgstore

import "fmt"

// OnProgress sets the handler of the progress reports every node publishes (PublishProgress;
// a store.ProgressHub's Apply), called on the listener's goroutine; it must not block.
func (s *Store) OnProgress(fn func(payload string)) {
	s.mu.Lock()
	s.onProgress = fn
	s.mu.Unlock()
}

// progressNotified hands a progress notification from any node to the handler.
func (s *Store) progressNotified(payload string) {
	s.mu.Lock()
	fn := s.onProgress
	s.mu.Unlock()
	if fn != nil {
		fn(payload)
	}
}

// PublishProgress sends a progress report (store.FormatProgress) to every node's streams, this
// one's included, by NOTIFY: no row is written. A report that cannot be sent is dropped (the
// next one, or the job's next state change, supersedes it).
func (s *Store) PublishProgress(payload string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify('`+notifyChannel+`', 'p:' || $1)`, payload); err != nil {
		return fmt.Errorf("publish progress: %w", err)
	}
	return nil
}
