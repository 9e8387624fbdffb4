package store

import (
	"errors"
	"fmt"
	"maps"

	bolt "go.etcd.io/bbolt"
)

// VerifyLedger checks, in one read transaction, the invariants DESIGN.md promises: for every
// account reserved_cents equals its unfinished jobs and each month's spend equals the jobs that
// succeeded in it; every index (queue, running, status) agrees with the job records, and each
// account's list of jobs (Account.LastJobID, Job.PrevJobID) holds exactly its jobs, newest
// first. It returns every violation found.
func (s *Store) VerifyLedger() error {
	var problems []error
	err := s.db.View(func(tx *bolt.Tx) error {
		unfinished := map[string]int64{}
		successes := map[string]map[string]int64{}
		queued, running := map[string]bool{}, map[string]bool{}
		jobsOf := map[string]int{}
		indexed := map[string]string{} // the status index's entries the job records call for
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
				successes[job.AccountID][monthOf(*job.FinishedAt)] += job.Charge()
			case StatusFailed, StatusCancelled:
			default:
				problems = append(problems, fmt.Errorf("job %s has illegal status %q", job.ID, job.Status))
			}
			jobsOf[job.AccountID]++
			indexed[string(indexKey(job.AccountID, job.Status, job.Seq))] = job.ID
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
		if index := tx.Bucket(bucketJobsByStatus); index != nil { // a file opened read-only before schema 4 has none
			inIndex := map[string]string{}
			index.ForEach(func(k, v []byte) error { inIndex[string(k)] = string(v); return nil })
			if !maps.Equal(inIndex, indexed) {
				problems = append(problems, fmt.Errorf("status index has %d entries, %d jobs; differing: %v",
					len(inIndex), len(indexed), indexDiff(inIndex, indexed)))
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
			maps.DeleteFunc(want, func(_ string, n int64) bool { return n == 0 }) // free hits
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
	if err == nil {
		err = s.db.View(func(tx *bolt.Tx) error {
			return verifyCacheRefs(tx, &problems)
		})
	}
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

// indexDiff lists up to 5 status index entries that are in one map and not the other.
func indexDiff(got, want map[string]string) []string {
	var out []string
	for k, v := range got {
		if want[k] != v && len(out) < 5 {
			out = append(out, fmt.Sprintf("extra %q -> %s", k, v))
		}
	}
	for k, v := range want {
		if got[k] != v && len(out) < 10 {
			out = append(out, fmt.Sprintf("missing %q -> %s", k, v))
		}
	}
	return out
}
