package service

// FilesPerTurn is filesPerTurn, for the tests of the periodic sweep.
const FilesPerTurn = filesPerTurn

// SweepTurn runs one periodic sweep pass (the sweeper's every SweepInterval), for tests.
func (m *Main) SweepTurn() { m.sweepTurn() }
