package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/store"
)

// ListJobsVisits runs ListJobs and returns how many table rows its statements read, as
// PostgreSQL's EXPLAIN ANALYZE counts them (rows each scan returned and rows its filters
// removed), for the conformance case that holds a page's cost to the page
// (storetest.ListVisitor).
func (s *Store) ListJobsVisits(accountID string, p store.ListParams) (int, error) {
	if p.Limit <= 0 {
		p.Limit = 20
	}
	ctx, cancel := s.ctx()
	defer cancel()
	// Fresh statistics, then the plan PostgreSQL takes once an account's history is large: on
	// this case's 202 rows, with statistics (autovacuum gathers them on its own time, which made
	// the case flaky), a sequential scan is rightly cheapest. Without one, a page that has no
	// index to serve it still reads the whole history and fails the case.
	if _, err := s.pool.Exec(ctx, "ANALYZE jobs"); err != nil {
		return 0, err
	}
	rows := 0
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		rows = 0
		if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		_, _, err := listJobs(ctx, explaining{tx: tx, rows: &rows}, accountID, p)
		return err
	})
	return rows, err
}

// explaining runs each statement under EXPLAIN ANALYZE first and adds the rows it read.
type explaining struct {
	tx   pgx.Tx
	rows *int
}

func (e explaining) explain(ctx context.Context, sql string, args []any) error {
	var out string
	if err := e.tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&out); err != nil {
		return fmt.Errorf("explain %q: %w", sql, err)
	}
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc) != 1 {
		return fmt.Errorf("explain %q: %d plans, %v", sql, len(doc), err)
	}
	*e.rows += doc[0].Plan.rowsRead()
	return nil
}

func (e explaining) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := e.explain(ctx, sql, args); err != nil {
		return nil, err
	}
	return e.tx.Query(ctx, sql, args...)
}

func (e explaining) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := e.explain(ctx, sql, args); err != nil {
		return errRow{err}
	}
	return e.tx.QueryRow(ctx, sql, args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// planNode is a node of EXPLAIN's JSON plan.
type planNode struct {
	NodeType         string     `json:"Node Type"`
	ActualRows       float64    `json:"Actual Rows"`
	ActualLoops      float64    `json:"Actual Loops"`
	RemovedByFilter  float64    `json:"Rows Removed by Filter"`
	RemovedByRecheck float64    `json:"Rows Removed by Index Recheck"`
	Plans            []planNode `json:"Plans"`
}

// rowsRead sums, over the plan's scans, the rows they returned and the rows they read and
// dropped.
func (n planNode) rowsRead() int {
	total := 0
	if strings.HasSuffix(n.NodeType, "Scan") {
		total += int(n.ActualRows*n.ActualLoops + n.RemovedByFilter + n.RemovedByRecheck)
	}
	for _, c := range n.Plans {
		total += c.rowsRead()
	}
	return total
}

// LockAccountClaims is the first key of the advisory lock a capped account's claims take.
const LockAccountClaims = lockAccountClaims

// UseGoTransitions makes s run every transition as its Go transaction, as before the
// transition functions of migration 0015, for the test that counts both paths' round trips.
func (s *Store) UseGoTransitions() { s.goTransitions = true }

// Retried counts the transactions this Store ran again after a deadlock or a serialization
// failure.
func (s *Store) Retried() int64 { return s.retried.Load() }
