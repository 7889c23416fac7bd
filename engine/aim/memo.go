package aim

import (
	"fmt"
	"math"
	"sync"
)

// pairMemo remembers the last (q, V) a channel integrated, with the rule sizes that produced it,
// and the pair (psi_out, FisherSum) found there: the SE asks for both at one point (FisherSum
// while solving, psi_out for the free entropy), and Bound copies of a channel share one memo.
// It is safe for concurrent use.
type pairMemo[P any] struct {
	mu          sync.Mutex
	ok          bool
	q, V        float64
	sizes       [2]int
	psi, fisher P
}

// integrals checks q >= 0 and 0 < V < inf, then returns the remembered pair at (q, V, sizes) or
// the one integrate computes there (remembered for the next call); name and op label the errors.
func (m *pairMemo[P]) integrals(name, op string, q, V float64, sizes [2]int, integrate func() (psi, fisher P, err error)) (psi, fisher P, err error) {
	if !(q >= 0) || !(V > 0) || math.IsInf(q, 0) || math.IsInf(V, 0) {
		return psi, fisher, fmt.Errorf("%s %s: need q >= 0 and V > 0, got q = %g, V = %g", name, op, q, V)
	}
	m.mu.Lock()
	hit := m.ok && m.q == q && m.V == V && m.sizes == sizes
	psi, fisher = m.psi, m.fisher
	m.mu.Unlock()
	if hit {
		return psi, fisher, nil
	}
	psi, fisher, err = integrate()
	if err != nil {
		var zero P
		return zero, zero, fmt.Errorf("%s %s(q = %g, V = %g): %w", name, op, q, V, err)
	}
	m.mu.Lock()
	m.ok, m.q, m.V, m.sizes, m.psi, m.fisher = true, q, V, sizes, psi, fisher
	m.mu.Unlock()
	return psi, fisher, nil
}
