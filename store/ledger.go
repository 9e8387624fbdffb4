package store

import (
	"errors"
	"fmt"
	"maps"

	bolt "go.etcd.io/bbolt"
)

// VerifyLedger checks, in one read transaction, the invariants DESIGN.md promises: for every
// account reserved_cents equals its unfinished jobs and each month's spend equals the jobs that
// succeeded in it; every index agrees with the job records, and each account's list of jobs
// (Account.LastJobID, Job.PrevJobID) holds exactly its jobs, newest first. It returns every
// violation found.
func (s *Store) VerifyLedger() error {
	var problems []error
	err := s.db.View(func(tx *bolt.Tx) error {
		unfinished := map[string]int64{}
		successes := map[string]map[string]int64{}
		queued, running := map[string]bool{}, map[string]bool{}
		jobsOf := map[string]int{}
		err := tx.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
			job, err := findJob(tx, string(k))
			if err != nil {
				return err
			}
			switch job.Status {
			case StatusCreated, StatusQueued, StatusRunning:
				unfinished[job.AccountID]++
			case StatusSucceeded:
				if job.FinishedAt == nil || job.Output == nil {
					problems = append(problems, fmt.Errorf("job %s succeeded without finished_at or output", job.ID))
					break
				}
				if successes[job.AccountID] == nil {
					successes[job.AccountID] = map[string]int64{}
				}
				successes[job.AccountID][monthOf(*job.FinishedAt)]++
			case StatusFailed, StatusCancelled:
			default:
				problems = append(problems, fmt.Errorf("job %s has illegal status %q", job.ID, job.Status))
			}
			jobsOf[job.AccountID]++
			if job.Status == StatusQueued {
				queued[job.ID] = true
			}
			if job.Status == StatusRunning {
				running[job.ID] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
		inQueue := map[string]bool{}
		tx.Bucket(bucketQueue).ForEach(func(k, _ []byte) error { inQueue[string(k[16:])] = true; return nil })
		for id := range queued {
			if !inQueue[id] {
				problems = append(problems, fmt.Errorf("queued job %s is not in the queue", id))
			}
		}
		inRunning := map[string]bool{}
		tx.Bucket(bucketRunning).ForEach(func(k, _ []byte) error { inRunning[string(k)] = true; return nil })
		if !maps.Equal(inRunning, running) {
			problems = append(problems, fmt.Errorf("running index %v differs from running jobs %v", inRunning, running))
		}
		return tx.Bucket(bucketAccounts).ForEach(func(k, _ []byte) error {
			acct, err := findAccount(tx, string(k))
			if err != nil {
				return err
			}
			if acct.ReservedCents != unfinished[acct.ID] {
				problems = append(problems, fmt.Errorf("account %s reserves %d cents for %d unfinished jobs",
					acct.ID, acct.ReservedCents, unfinished[acct.ID]))
			}
			want := map[string]int64{}
			for m, n := range successes[acct.ID] {
				want[m] += n
			}
			for m, n := range acct.PurgedSuccesses {
				want[m] += n
			}
			got := map[string]int64{}
			for m, n := range acct.MonthlySpend {
				if n != 0 {
					got[m] = n
				}
			}
			if !maps.Equal(got, want) {
				problems = append(problems, fmt.Errorf("account %s spend %v, successes %v", acct.ID, got, want))
			}
			listed, err := verifyJobList(tx, acct)
			if err != nil {
				problems = append(problems, err)
			} else if listed != jobsOf[acct.ID] {
				problems = append(problems, fmt.Errorf("account %s lists %d of its %d jobs", acct.ID, listed, jobsOf[acct.ID]))
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("verify ledger: %w", err)
	}
	return errors.Join(problems...)
}

// verifyJobList follows the account's list of jobs and counts them, checking that each is the
// account's and older than the one before.
func verifyJobList(tx *bolt.Tx, acct Account) (int, error) {
	n := 0
	var newer Job
	for job, err := range listedJobs(tx, acct.LastJobID) {
		if err != nil {
			return n, err
		}
		if job.AccountID != acct.ID {
			return n, fmt.Errorf("account %s lists job %s of account %s", acct.ID, job.ID, job.AccountID)
		}
		if n > 0 && job.Seq >= newer.Seq {
			return n, fmt.Errorf("account %s lists job %s (seq %d) after job %s (seq %d)", acct.ID, job.ID, job.Seq, newer.ID, newer.Seq)
		}
		n++
		newer = job
	}
	return n, nil
}
