package store

import bolt "go.etcd.io/bbolt"

// ListJobsVisits runs ListJobs and returns how many index entries and job records it read,
// for the conformance case that holds a page's cost to the page (storetest.ListVisitor).
func (s *Store) ListJobsVisits(accountID string, p ListParams) (int, error) {
	if p.Limit <= 0 {
		p.Limit = 20
	}
	visits := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		_, _, err := listJobs(tx, accountID, p, s.opts.Now(), &visits)
		return err
	})
	return visits, err
}
